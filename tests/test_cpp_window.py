"""Windowed C++ parsing (cpasync_migrate/cpp/window.py): a window only ever answers "no site", and it
answers so exactly when the whole-file analysis finds none.

Two properties, on every C++ fixture (as it is, and with unrelated declarations appended so that the
window leaves most of the file out) and on crafted cases:

- the front end's answer (window first, the whole file where the window does not decide) equals the
  whole-file analysis, finding for finding;
- soundness of the window itself: where the whole file has a site, the window's walk finds one too
  (so the window can never answer "no site" wrongly).

The slow test checks both on every C++ file of the benchmark trees and of the realcpp trees that names
a trigger (the prefilter's needles), where those trees are on this machine.
"""
from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from cpasync_migrate import cpp, files
from cpasync_migrate.cpp import source, window
from cpasync_migrate.cpp.analyzer import CppAnalyzer
from cpasync_migrate.cpp.cpprules import load_cpp_rules
from cpasync_migrate.findings import FrontEndOptions
from cpasync_migrate.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "cpp"
RULES = load_rules()
CPP = load_cpp_rules(RULES)
OPTS = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)

# Unrelated code appended to a file: functions, a class, a registration, a lambda at namespace scope,
# literals with braces in them, a digit separator, a raw string.  It holds no trigger.
PADDING = r'''

namespace padding {
// a comment with { and } and "quotes"
static int Count(const std::string& s) {
  int n = 0;
  for (char c : s) {
    if (c == '{' || c == '}' || c == '\'') n += 1'000;
  }
  return n;
}
class Walker : public StmtVisitor {
 public:
  void VisitStmt_(const ForNode* op) final {
    depth_ += 1;
    StmtVisitor::VisitStmt_(op);
    depth_ -= 1;
  }
 private:
  int depth_{0};
};
const char* kText = R"doc(a raw string { with a brace ) and "quotes" )doc";
auto kLambda = [](int x) { return x + 1; };
TVM_REGISTER_GLOBAL("padding.count").set_body_typed([](std::string s) { return Count(s); });
}  // namespace padding
'''


def _cases():
    return [pytest.param(p.stem, id=p.stem) for p in sorted(FIXTURES.glob("*.toml"))]


def _load(name: str):
    meta = tomllib.loads((FIXTURES / f"{name}.toml").read_text(encoding="utf-8"))
    inp = next(FIXTURES.glob(f"{name}.in.*"))
    target = "0.1.8"
    args = meta.get("args", [])
    if "--target" in args:
        target = args[args.index("--target") + 1]
    opts = FrontEndOptions(rules=RULES, target=RULES.generation(target), source=RULES.legacy)
    return inp.read_bytes().decode("utf-8"), inp.name, opts


def _key(a):
    return (a.error, a.error_line, [
        (f.line, f.column, f.end_line, f.end_column, f.code, f.message, f.function, f.status, f.op, f.role,
         None if f.fix is None else (tuple((e.start, e.end, e.replacement) for e in f.fix.edits),
                                     f.fix.applicability, tuple(f.fix.assumptions)))
        for f in a.findings])


@pytest.fixture
def no_minimum(monkeypatch):
    monkeypatch.setattr(window, "MIN_BYTES", 0)
    monkeypatch.setattr(window, "ENABLED", True)


def _window_walk(text: str, path: str, opts):
    """The window's own walk: (ranges, sites found) or None where the window is not used at all."""
    data = text.encode("utf-8", "surrogatepass")
    ranges = window.plan(data, CPP)
    if ranges is None:
        return None
    an = CppAnalyzer(text, path, opts, window=ranges)
    if an.errors or an.src.root.has_error or not window._names_closed(
            an, ranges, [*an.file_op_vars(), *an.op_predicates()]):  # (read outside the window: whole)
        return None
    an.collect()
    return ranges, an.sites


def _shape(root) -> list:
    """Every node of a tree: its type, byte span, and whether it is missing or an error."""
    out = []
    c = root.walk()
    while True:
        n = c.node
        out.append((n.type, n.start_byte, n.end_byte, n.is_missing, n.has_error, c.field_name))
        if c.goto_first_child():
            continue
        while not c.goto_next_sibling():
            if not c.goto_parent():
                return out


def _check(text: str, path: str, opts) -> bool:
    """Both properties for one text; True when the window answered for the file.  The whole-file analysis
    here parses afresh; the front end's reuses the window's tree where the window did not decide, so the
    first assertion is also the equality of REUSE on and off (and the trees are compared node for node)."""
    whole = CppAnalyzer(text, path, opts).run()
    assert _key(cpp.analyze(text, path, opts)) == _key(whole)
    data = text.encode("utf-8", "surrogatepass")
    shown, tree = window.attempt(text, path, opts, data)
    if tree is not None:
        assert shown is None
        assert _shape(source.parse_bytes(data, tree).root_node) == _shape(source.parse_bytes(data).root_node)
    walked = _window_walk(text, path, opts)
    if walked is not None and whole.error is None and whole.findings:
        assert walked[1], f"{path}: the whole file has sites the window does not see"
    return window.analyze(text, path, opts) is not None


@pytest.mark.parametrize("name", _cases())
def test_windowed_equals_whole_on_fixtures(name, no_minimum):
    text, path, opts = _load(name)
    _check(text, path, opts)
    _check(text + PADDING, path, opts)  # most of the file outside the window


def test_the_padding_is_left_out_of_the_window():
    text = PADDING + "\nbool IsCopy(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\n"
    data = text.encode()
    ranges = window.plan(data, CPP)
    kept = b"".join(data[a:b] for a, b in ranges)
    assert b"IsCopy" in kept and b"namespace padding {" in kept and b"}  // namespace padding" in kept
    assert b"Walker" not in kept and b"Count(s)" not in kept and b"raw string" not in kept


def test_a_file_without_sites_is_answered_by_its_window(no_minimum):
    text = ("namespace tvm {\nnamespace codegen {\n" + PADDING
            + "\nvoid CodeGen::VisitExpr_(const CallNode* op, std::ostream& os) {\n"
              "  if (op->op.same_as(builtin::ptx_cp_async())) {\n"
              "    ICHECK(op->args.size() == 3U || op->args.size() == 4U);\n"
              "    os << PrintExpr(op->args[0]) << PrintExpr(op->args[1]);\n"
              "  }\n}\n}  // namespace codegen\n}  // namespace tvm\n")
    assert _check(text, "k.cc", OPTS)
    shown = window.analyze(text, "k.cc", OPTS)
    assert shown.findings == [] and shown.error is None


def test_a_legacy_site_in_a_window_sends_the_file_whole(no_minimum):
    text = ("namespace tvm {\n" + PADDING
            + "\nvoid CodeGen::VisitExpr_(const CallNode* op, std::ostream& os) {\n"
              "  if (op->op.same_as(builtin::ptx_cp_async())) {\n"
              "    std::string dst = PrintExpr(op->args[0]);\n"
              "    std::string dst_offset = PrintExpr(op->args[1]);\n"
              "    std::string src = PrintExpr(op->args[2]);\n"
              "    std::string src_offset = PrintExpr(op->args[3]);\n"
              "    std::string size = PrintExpr(op->args[4]);\n"
              "    os << dst << \" + \" << dst_offset << src << \" + \" << src_offset << size;\n"
              "  }\n}\n}  // namespace tvm\n")
    assert not _check(text, "k.cc", OPTS)
    _, sites = _window_walk(text, "k.cc", OPTS)
    assert [s.code for s in sites]
    assert [f.code for f in cpp.analyze(text, "k.cc", OPTS).findings] == ["CPA104"]  # a legacy reader


def test_a_printer_helper_without_the_op_name_is_in_the_window(no_minimum):
    """CPA105 reads every declarator: one with offset-like second and fourth parameters is kept by the
    offset rule, though the op's name is nowhere near it."""
    helper = ("std::string PrintCpAsyncAssembly(const std::string& shared_ptr, const std::string& shared_offset,\n"
              "                                 const std::string& global_ptr, const std::string& global_offset,\n"
              "                                 const std::string& bytes);\n")
    text = PADDING + helper + PADDING.replace("padding", "padding2")
    _, sites = _window_walk(text, "k.h", OPTS)
    assert [s.code for s in sites] == ["CPA105"]
    assert not _check(text, "k.h", OPTS)


@pytest.mark.parametrize("between", ["  // dst; in shared\n const std::string& global_ptr",
                                     "  /* dst; in shared */ const std::string& global_ptr",
                                     ' const std::string& global_ptr = ";"',
                                     " std::function<void()> global_ptr = [] { g(); }"])
def test_a_semicolon_between_a_helpers_offsets_that_ends_no_statement(between, no_minimum):
    """A ';' in a comment, a literal or a lambda between the offset parameters does not hide the helper."""
    helper = ("std::string PrintCpAsyncAssembly(const std::string& shared_ptr, const std::string& shared_offset,"
              + between + ", const std::string& global_offset,\n"
              "                                 const std::string& bytes);\n")
    text = PADDING + helper + PADDING.replace("padding", "padding2") + \
        "bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\n"
    kept = b"".join(text.encode()[a:b] for a, b in window.plan(text.encode(), CPP))
    assert b"PrintCpAsyncAssembly" in kept
    assert [f.code for f in cpp.analyze(text, "k.h", OPTS).findings] == ["CPA105"]
    assert not _check(text, "k.h", OPTS)


def test_an_array_helper_named_outside_the_window_sends_the_file_whole(no_minimum):
    """``Call(t, op, MakeArgs(...))``: whether it is a site depends on the file's functions named
    MakeArgs, which the analyzer looks up file-wide; one of them lies outside the window."""
    text = ("Array<PrimExpr> MakeArgs(PrimExpr a) { return {a, a, a}; }\n" + PADDING
            + "Stmt Build(PrimExpr a) {\n"
              "  return Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), MakeArgs(a)));\n}\n")
    ranges = window.plan(text.encode(), CPP)
    an = CppAnalyzer(text, "k.cc", OPTS, window=ranges)
    assert not window._helper_calls_closed(an, ranges)
    assert window.analyze(text, "k.cc", OPTS) is None
    assert _key(cpp.analyze(text, "k.cc", OPTS)) == _key(CppAnalyzer(text, "k.cc", OPTS).run())


def test_the_context_a_site_reads_is_kept():
    """Namespace openings and closings, using declarations and preprocessor conditionals at namespace
    scope stay in the window; #include lines and unrelated declarations do not."""
    text = ('#include "a.h"\nusing namespace tvm::tl;\n#if defined(X)\nnamespace tl {\nint Unrelated() { return 1; }\n'
            "bool F(const CallNode* op) { return op->op.same_as(ptx_cp_async()); }\n}  // namespace tl\n#endif\n")
    data = text.encode()
    kept = b"".join(data[a:b] for a, b in window.plan(data, CPP))
    assert kept == (b"using namespace tvm::tl;\n#if defined(X)\nnamespace tl {\n"
                    b"bool F(const CallNode* op) { return op->op.same_as(ptx_cp_async()); }\n}  // namespace tl\n#endif\n")


def test_a_declaration_sharing_a_line_with_a_kept_one_is_kept():
    text = "int a = 1; bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\nint b = 2;\n"
    data = text.encode()
    assert window.plan(data, CPP) == [(0, text.index("int b"))]


UNBOUNDED = {
    "unclosed_comment": "void f() {}\n/* never closed\n",
    "unclosed_string": 'void f() { auto s = "abc; }\n',
    "raw_string_unclosed": 'auto s = R"x(abc)y";\n',
    "conditional_across_a_head": "#if A\nvoid f(int a) {\n#else\nvoid f(long a) {\n#endif\n  return;\n}\n",
    "conditional_across_a_brace": "void f() {\n#if A\n  {\n#endif\n  }\n}\n",
    "splice_in_code": "int x = 1 + \\\n 2;\n",
    "comment_spliced": "// a comment \\\nint x;\n",
    "unbalanced": "void f() { {\n}\n",
    "extra_brace": "void f() {}\n}\n",
    "quote_after_a_name": "int x = a'b';\n",
    "nul": "int x;\x00\n",
    "conditional_open_at_end": "#if A\nint x;\n",
}


@pytest.mark.parametrize("name", sorted(UNBOUNDED))
def test_what_the_scan_cannot_bound_goes_whole(name):
    text = UNBOUNDED[name] + "bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\n"
    assert window.plan(text.encode(), CPP) is None


def test_literals_the_scan_reads():
    text = ("int a = 1'000'000 + 0x1'F;\nchar b = '\\'';\nchar16_t c = u'{';\nauto d = u8R\"z(})z\";\n"
            'const char* e = "\\"}";\n'
            "bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\n")
    data = text.encode()
    ranges = window.plan(data, CPP)
    assert ranges == [(text.index("bool F"), len(data))]


def test_a_parse_error_in_the_window_sends_the_file_whole(no_minimum):
    text = PADDING + "bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()) +; }\n"
    assert window.analyze(text, "k.cc", OPTS) is None
    assert _key(cpp.analyze(text, "k.cc", OPTS)) == _key(CppAnalyzer(text, "k.cc", OPTS).run())


def test_a_window_that_does_not_decide_hands_its_tree_on(no_minimum, monkeypatch):
    """A legacy site in the window: the file goes whole, and its parse starts from the window's tree
    (REUSE), or from nothing with the switch off; the analyses agree."""
    text = ("namespace tvm {\n" + PADDING
            + "\nvoid CodeGen::VisitExpr_(const CallNode* op, std::ostream& os) {\n"
              "  if (op->op.same_as(builtin::ptx_cp_async())) {\n"
              "    os << PrintExpr(op->args[0]) << PrintExpr(op->args[4]);\n"
              "  }\n}\n}  // namespace tvm\n")
    shown, tree = window.attempt(text, "k.cc", OPTS)
    assert shown is None and tree is not None
    assert len(tree.included_ranges) >= 2  # a window's parse (the padding left out), not the whole file's
    with_reuse = _key(cpp.analyze(text, "k.cc", OPTS))
    monkeypatch.setattr(window, "REUSE", False)
    assert window.attempt(text, "k.cc", OPTS) == (None, None)
    assert _key(cpp.analyze(text, "k.cc", OPTS)) == with_reuse
    assert [f[4] for f in with_reuse[2]] == ["CPA104"]


def test_the_switch_turns_it_off(monkeypatch):
    text = PADDING * 40 + "bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\n"
    assert len(text) >= window.MIN_BYTES
    monkeypatch.setattr(window, "ENABLED", True)
    assert window.analyze(text, "k.cc", OPTS) is not None
    monkeypatch.setattr(window, "ENABLED", False)
    assert window.analyze(text, "k.cc", OPTS) is None


def test_small_files_are_parsed_whole(monkeypatch):
    monkeypatch.setattr(window, "ENABLED", True)
    text = PADDING + "bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\n"
    assert len(text.encode()) < window.MIN_BYTES
    assert window.analyze(text, "k.cc", OPTS) is None


def test_positions_in_a_window_are_the_files():
    text = "// héllo wörld\n" + PADDING + "bool F(const CallNode* op) {\n  return op->op.same_as(builtin::ptx_cp_async());\n}\n"
    ranges = window.plan(text.encode(), CPP)
    an = CppAnalyzer(text, "k.cc", OPTS, window=ranges)
    [fn] = [n for n in an.src.root.children if n.type == "function_definition"]
    assert an.text_of(fn).startswith("bool F(") and fn.start_point[0] == text[:text.index("bool F")].count("\n")


# ------------------------------------------------------------------ the trees (slow)

CACHE = Path(os.environ.get("CPASYNC_BENCH_CACHE", Path.home() / ".cache" / "cpasync-migrate" / "bench-tree"))
REALCPP = Path.home() / ".cache" / "cpasync-migrate" / "realcpp"


def _tree_files() -> list[Path]:
    out = []
    for base in [CACHE / "tree", CACHE / "tree-git", REALCPP]:
        if not base.is_dir():
            continue
        for dirpath, _, names in os.walk(base):
            for n in names:
                if n.endswith(files.CPP_SUFFIXES):
                    p = Path(dirpath) / n
                    try:
                        raw = p.read_bytes()
                    except OSError:
                        continue
                    if files.has_needle(raw):
                        out.append(p)
    return sorted(set(out))


@pytest.mark.slow
def test_windowed_equals_whole_on_the_trees(no_minimum):
    paths = _tree_files()
    if not paths:
        pytest.skip("no benchmark or realcpp tree on this machine (benchmarks/build_tree.sh)")
    answered = 0
    for p in paths:
        raw = p.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        answered += _check(text, str(p), OPTS)
    assert answered  # the window decided some of them, or the test shows nothing


def test_a_file_on_one_line_is_planned_in_linear_time():
    """Many declarations on one line (a minified file): one line, so the window is the whole line, found
    without a pass per declaration."""
    import time

    text = "int a0 = 0; " + " ".join(f"int f{i}(int x) {{ return x + {i}; }}" for i in range(20000)) + \
        " bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\n"
    t0 = time.process_time()
    ranges = window.plan(text.encode(), CPP)
    assert time.process_time() - t0 < 10  # quadratic sweeps took minutes
    assert ranges == [(0, len(text))]


def test_many_literals_on_one_line_are_read():
    text = "const char* k[] = {" + ", ".join(f'"s{i};}}", \'{{\'' for i in range(2000)) + "};\n" + \
        "bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\n"
    ranges = window.plan(text.encode(), CPP)
    assert ranges == [(text.index("bool F"), len(text))]


# ------------------------------------------------------------------ class members (MEMBERS)

# A visitor class that names the op in one member only (the access-pointer layout: no site); its other members and
# the shapes a member scan must read: access labels, a constructor's brace initialisers, a conditional, an anonymous
# struct member, a lambda member, a macro without its ';', a nested class, a defaulted member.
VISITOR = r'''
namespace tvm {
namespace tl {

template <typename Node, typename = void>
class AsyncCopyLowerer final : public arith::IRMutatorWithAnalyzer {
 public:
  explicit AsyncCopyLowerer(arith::Analyzer* analyzer)
      : IRMutatorWithAnalyzer(analyzer), depth_{0}, seen_{} {
    Reset();
  }
  TVM_DECLARE_LOWERER(AsyncCopyLowerer)
  ~AsyncCopyLowerer() = default;

 private:
  PrimExpr VisitExpr_(const CallNode* op) final {
    if (op->op.same_as(builtin::ptx_cp_async())) {
      ICHECK(op->args.size() == 3U || op->args.size() == 4U);
      return Call(op->dtype, op->op, {op->args[0], op->args[1], op->args[2]});
    }
    return IRMutatorWithAnalyzer::VisitExpr_(op);
  }
#if defined(TL_TRACE)
  void Trace(const Stmt& s) { LOG(INFO) << s << '}'; }
#endif
  Stmt VisitStmt_(const ForNode* op) final {
    depth_ += 1;
    Stmt body = IRMutatorWithAnalyzer::VisitStmt_(op);
    depth_ -= 1;
    return body;
  }
  struct {
    int copies = 0;
    const char* note = "{;}";
  } stats_;
  std::function<int(int)> scale_ = [](int x) { return x * 2; };
  class Scope {
   public:
    explicit Scope(int* d) : d_(d) { ++*d_; }
    ~Scope() { --*d_; }

   private:
    int* d_;
  };
  void Reset() { depth_ = 0; }
  int depth_;
  std::unordered_set<const VarNode*> seen_;
};

}  // namespace tl
}  // namespace tvm
'''


def _kept(text: str) -> bytes:
    data = text.encode()
    return b"".join(data[a:b] for a, b in window.plan(data, CPP))


@pytest.fixture(params=[True, False], ids=["members", "classes-whole"])
def members(request, monkeypatch):
    monkeypatch.setattr(window, "MEMBERS", request.param)
    return request.param


def test_a_class_is_cut_into_the_members_that_name_the_op(members):
    kept = _kept(VISITOR)
    assert b"class AsyncCopyLowerer final" in kept and b"PrimExpr VisitExpr_(const CallNode* op)" in kept
    assert b"};\n}  // namespace tl" in kept  # the class's close (the blank line between is in no item)
    assert b"#if defined(TL_TRACE)" in kept and b"#endif" in kept  # its conditional lines, as at namespace scope
    others = [b"Reset();", b"VisitStmt_(const ForNode* op)", b"stats_", b"scale_", b"class Scope", b"seen_;",
              b"LOG(INFO)", b"TVM_DECLARE_LOWERER"]
    assert [o for o in others if o in kept] == ([] if members else others)


def test_a_class_cut_into_members_answers_for_its_file(members, no_minimum):
    """Cut, the window is a small part of the file and shows it has no site; whole, the class is most of the file
    and the window is not tried (``MAX_SHARE``)."""
    assert _check(VISITOR, "k.cc", OPTS) == members
    assert _key(cpp.analyze(VISITOR, "k.cc", OPTS)) == _key(CppAnalyzer(VISITOR, "k.cc", OPTS).run())


# Each replaces the access-pointer member of VISITOR: a member that is a site, or one the cut must keep whole.
MEMBER_CASES = {
    "legacy_reader": (
        "  void VisitExpr_(const CallNode* op, std::ostream& os) final {\n"
        "    if (op->op.same_as(builtin::ptx_cp_async())) {\n"
        "      std::string dst = PrintExpr(op->args[0]);\n"
        "      std::string dst_offset = PrintExpr(op->args[1]);\n"
        "      os << dst << \" + \" << dst_offset << PrintExpr(op->args[4]);\n"
        "    }\n  }\n"),
    "legacy_builder": (
        "  Stmt Build(PrimExpr dst, PrimExpr dst_off, PrimExpr src, PrimExpr src_off) {\n"
        "    return Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(),\n"
        "                         {dst->data, dst_off, src->data, src_off, PrimExpr(16)}));\n  }\n"),
    "printer_helper_member": (
        "  bool IsCopy(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\n"
        "  static std::string PrintCopy(const std::string& shared_ptr, const std::string& shared_offset,\n"
        "                               const std::string& global_ptr, const std::string& global_offset,\n"
        "                               const std::string& bytes) {\n"
        "    return shared_ptr + shared_offset + global_ptr + global_offset + bytes;\n  }\n"),
    "legacy_in_a_nested_class": (
        "  struct Printer {\n"
        "    void Print(const CallNode* op, std::ostream& os) {\n"
        "      if (op->op.same_as(builtin::ptx_cp_async())) {\n"
        "        os << op->args[0] << \" + \" << op->args[1] << op->args[2] << op->args[3] << op->args[4];\n"
        "      }\n    }\n  };\n"),
    "constructor_initialiser_names_the_op": (
        "  AsyncCopyLowerer(int n) : op_{builtin::ptx_cp_async()}, n_{n} { Reset(); }\n"
        "  const Op op_;\n  int n_;\n"),
    "op_member_read_elsewhere": (
        "  const Op& cp_ = builtin::ptx_cp_async();\n"
        "  void Print(const CallNode* op, std::ostream& os) {\n"
        "    if (op->op.same_as(cp_)) {\n"
        "      os << op->args[0] << \" + \" << op->args[1] << op->args[4];\n"
        "    }\n  }\n"),
    "member_set_by_the_constructor_read_elsewhere": (
        "  AsyncCopyLowerer(int n) : cp_(builtin::ptx_cp_async()), n_{n} {}\n"
        "  void Print(const CallNode* op, std::ostream& os) {\n"
        "    if (op->op.same_as(this->cp_)) {\n"
        "      os << op->args[0] << \" + \" << op->args[1] << op->args[4];\n"
        "    }\n  }\n  Op cp_;\n  int n_;\n"),
    "legacy_in_a_lambda_member": (
        "  std::function<void(const CallNode*)> print_ = [this](const CallNode* op) {\n"
        "    if (op->op.same_as(builtin::ptx_cp_async())) {\n"
        "      stream_ << op->args[0] << \" + \" << op->args[1] << op->args[4];\n"
        "    }\n  };\n"),
    "instance_after_the_class": None,  # the class ends in a declarator: `} kLowerer;`
}


def _member_case(name: str) -> str:
    start = VISITOR.index("  PrimExpr VisitExpr_(const CallNode* op) final {")
    end = VISITOR.index("#if defined(TL_TRACE)")
    member = MEMBER_CASES[name]
    if member is None:
        return VISITOR.replace("  std::unordered_set<const VarNode*> seen_;\n};",
                               "  std::unordered_set<const VarNode*> seen_;\n} kLowerer;").replace(
            "template <typename Node, typename = void>\n", "")
    return VISITOR[:start] + member + VISITOR[end:]


@pytest.mark.parametrize("name", sorted(MEMBER_CASES))
def test_members_that_are_sites_or_must_stay_whole(name, members, no_minimum):
    """The front end's answer equals the whole file's, and where the whole file has a site the window's walk sees
    one (``_check``), with classes cut into members and kept whole; and both settings answer alike."""
    text = _member_case(name)
    _check(text, "k.cc", OPTS)
    _check(text + PADDING, "k.cc", OPTS)


@pytest.mark.parametrize("name", sorted(MEMBER_CASES))
def test_cutting_classes_changes_no_answer(name, monkeypatch, no_minimum):
    text = _member_case(name) + PADDING
    monkeypatch.setattr(window, "MEMBERS", False)
    whole_classes = _key(cpp.analyze(text, "k.cc", OPTS))
    monkeypatch.setattr(window, "MEMBERS", True)
    assert _key(cpp.analyze(text, "k.cc", OPTS)) == whole_classes


def test_sites_in_members_are_seen_by_the_cut_window(no_minimum):
    """The cases the whole file reports: the window cut into members finds a site in each (so it sends the file
    whole), and the findings are the whole file's."""
    codes = {}
    for name in MEMBER_CASES:
        text = _member_case(name)
        whole = CppAnalyzer(text, "k.cc", OPTS).run()
        codes[name] = sorted({f.code for f in whole.findings})
        if whole.findings:  # the window's walk sees a site, or the window is not used (an Op member)
            walked = _window_walk(text, "k.cc", OPTS)
            assert (walked is None and window.analyze(text, "k.cc", OPTS) is None) or walked[1], name
    assert codes["legacy_reader"] and codes["legacy_builder"] and codes["printer_helper_member"]
    assert codes["legacy_in_a_nested_class"] and codes["legacy_in_a_lambda_member"]
    # a consumer that reaches the op through an Op member is reported, left for a person
    assert codes["op_member_read_elsewhere"] == codes["member_set_by_the_constructor_read_elsewhere"] == ["CPA104"]


CLASS_HEADS_KEPT_WHOLE = {
    "alignas": "struct alignas(16) Lowerer {",  # a parenthesis in the head
    "function_returning_a_struct": "struct Lowerer* Make() {",
    "enum": "enum class Lowerer : int {",
}


@pytest.mark.parametrize("name", sorted(CLASS_HEADS_KEPT_WHOLE))
def test_heads_the_cut_does_not_read_keep_the_class_whole(name):
    head = CLASS_HEADS_KEPT_WHOLE[name]
    text = (head + "\n  int Unrelated() { return 1; }\n"
            "  bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\n};\n")
    assert b"Unrelated" in _kept(text)


def test_a_class_body_the_scan_cannot_bound_stays_whole():
    """A conditional that opens in the class body and closes in a member: the body is not cut."""
    text = ("class Lowerer {\n  int Unrelated() { return 1; }\n#if A\n  void G() {\n#endif\n  }\n"
            "  bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\n};\n")
    assert window.plan(text.encode(), CPP) is None or b"Unrelated" in _kept(text)


def test_class_heads_are_read_in_linear_time():
    """A head the pattern does not take (many '>' and class keys, then an '='): refused without trying each '>'."""
    import time

    head = b"template <" + b"> class A " * 20000 + b"= 1 {\n"
    t0 = time.process_time()
    assert window._CLASS_DEF.fullmatch(head, 0, len(head) - 2) is None
    assert time.process_time() - t0 < 5  # quadratic backtracking took minutes
    for ok in (b"template <typename T, typename U = Pair<T, int>>\nclass X final : public Base<T> ",
               b"struct TVM_DLL Lowerer : public StmtExprMutator ", b"union Bits "):
        assert window._CLASS_DEF.fullmatch(ok)


def test_classes_nested_deeper_than_the_cut_goes_stay_whole(monkeypatch):
    text = "bool F(const CallNode* op) { return op->op.same_as(builtin::ptx_cp_async()); }\nint Unrelated() { return 1; }\n"
    for k in range(window._MEMBER_DEPTH + 2):
        text = f"struct S{k} {{\n{text}}};\n"
    assert b"Unrelated" in _kept(text)  # the innermost classes are kept whole
    monkeypatch.setattr(window, "_MEMBER_DEPTH", window._MEMBER_DEPTH + 2)
    assert b"Unrelated" not in _kept(text)


@pytest.mark.parametrize("holder", [
    "bool IsCopy(const CallNode* c) { return c->op.same_as(builtin::ptx_cp_async()); }\n",  # a predicate
    "static const Op& kCopy = builtin::ptx_cp_async();\nbool IsCopy(const CallNode* c) { return c->op.same_as(kCopy); }\n",
])
def test_a_reader_that_names_only_a_predicate_or_an_op_variable_sends_the_file_whole(holder, no_minimum):
    """The reader names no op, so the window leaves it out; the name it calls occurs outside the window, so the window
    does not answer, and the whole file's analysis finds the reader (left for a person)."""
    reader = ("void Count(const CallNode* call, int* n) {\n  if (!IsCopy(call)) return;\n"
              "  *n += Downcast<IntImm>(call->args[4])->value;\n}\n")
    text = holder + PADDING + reader
    assert b"Count(const CallNode" not in _kept(text)
    assert window.analyze(text, "k.cc", OPTS) is None
    got = cpp.analyze(text, "k.cc", OPTS)
    assert [(f.code, f.line) for f in got.findings] == [("CPA104", text[:text.index("if (!IsCopy")].count("\n") + 1)]
    assert _check(text, "k.cc", OPTS) is False
