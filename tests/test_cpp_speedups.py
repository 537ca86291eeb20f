"""Every speed-up of the C++ front end behind its switch gives the same analysis as without it.

The switches (each a module attribute read from its environment variable):

- ``window.ENABLED`` (``CPASYNC_MIGRATE_CPP_WINDOW``): a window that shows a file has no site;
- ``window.REUSE`` (``CPASYNC_MIGRATE_CPP_WINDOW_REUSE``): the whole file's parse reuses the window's tree;
- ``context.LEAN`` (``CPASYNC_MIGRATE_CPP_LEAN``): the nodes the checks read (the analyzer's walk, the
  function around a node, a function's Op variables) found by queries over the bytes that matter alone, and
  the ifs and calls whose condition or bytes hold no op word not handed to the checks;
- ``analyzer.INCREMENTAL_CHECK`` (``CPASYNC_MIGRATE_CPP_INCREMENTAL_CHECK``): the fixes' re-parse check parses the
  rewritten text incrementally from the file's tree (its error count is also compared with a fresh parse's);
- ``source.ONE_QUERY`` (``CPASYNC_MIGRATE_CPP_ONE_QUERY``): one tree-sitter query for every kind of node the front end
  asks for, the kinds told apart by type afterwards.
- ``analyzer.EDIT_INDEX`` (``CPASYNC_MIGRATE_CPP_EDIT_INDEX``): the fixes' overlap check by buckets of the file and the
  incremental re-parse's line numbers by a list of line breaks (a file of many fixes).
- ``analyzer.AROUND_ANY`` (``CPASYNC_MIGRATE_CPP_AROUND_ANY``): the nodes around the op's occurrences each found once,
  by one query over the occurrences past a quota (occurrences deep inside one another);
- ``args_index.ON`` (``CPASYNC_MIGRATE_CPP_ARGS_INDEX``): a consumer's ``args`` reads and declarations found by one
  walk of the outermost region asked, with the parents the walk met (nested branches, deep expressions);
- ``analyzer.WORDS_RX`` (``CPASYNC_MIGRATE_CPP_WORDS_RX``): a node's bytes searched for every op word at once, by one
  regular expression of their common prefixes (many Op variables);
- ``declarations.DECL_INDEX`` (``CPASYNC_MIGRATE_CPP_DECL_INDEX``): the file's definitions and declarators by name,
  listed once, and each name's overload questions answered once (many helper declarations);
- ``scope_index.ON`` (``CPASYNC_MIGRATE_CPP_SCOPE_INDEX``): what a function or class declares, assigns and names,
  found by one walk of it per file and looked up by name (a function of many builders).

Compared: the analyses (every finding with its fix, edits, assumptions, op and role; the error), and the
change sets the findings make (``sets.group``), with every switch on, every switch off, and each one off
alone.  On every C++ fixture, as it is and padded so the window leaves most of it out (fast); on every C++
file of the benchmark trees and the realcpp trees that names a trigger (slow).
"""
from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from cpasync_migrate import cpp, files, sets
from cpasync_migrate.cpp import analyzer, args_index, context, declarations, scope_index, source, window
from cpasync_migrate.findings import FileOutcome, FrontEndOptions
from cpasync_migrate.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "cpp"
RULES = load_rules()
CACHE = Path(os.environ.get("CPASYNC_BENCH_CACHE", Path.home() / ".cache" / "cpasync-migrate" / "bench-tree"))
REALCPP = Path.home() / ".cache" / "cpasync-migrate" / "realcpp"

SWITCHES = [(window, "ENABLED"), (window, "REUSE"), (context, "LEAN"), (analyzer, "INCREMENTAL_CHECK"), (source, "ONE_QUERY"),
            (analyzer, "EDIT_INDEX"), (scope_index, "ON"), (analyzer, "AROUND_ANY"), (args_index, "ON"),
            (declarations, "DECL_INDEX"), (analyzer, "WORDS_RX")]

# Unrelated declarations appended to a fixture, so that its window leaves most of the file out.
PADDING = "\n".join(
    f"static int Unrelated{i}(const std::string& s) {{\n  int n = 0;\n  for (char c : s) {{ if (c == '{{') n += {i}; }}\n"
    f"  return n;\n}}\n" for i in range(40)) + "\n"


def _settings():
    """(name, {switch: value}) of each compared setting."""
    out = [("all on", {s: True for s in SWITCHES}), ("all off", {s: False for s in SWITCHES})]
    for s in SWITCHES:
        out.append((f"{s[1]} off", {t: t != s for t in SWITCHES}))
    return out


def _analyses(items, monkeypatch) -> dict:
    """{setting: [analysis of each (text, path, options)]}."""
    out = {}
    for name, values in _settings():
        with monkeypatch.context() as m:
            m.setattr(window, "MIN_BYTES", 0)
            for (mod, attr), v in values.items():
                m.setattr(mod, attr, v)
            got = []
            for text, path, opts in items:
                source._ERROR_MEMO.clear()  # each setting parses for itself
                got.append(cpp.analyze(text, path, opts))
            out[name] = got
    return out


def _change_sets(items, analyses) -> list:
    outcomes = [FileOutcome(path=path, language="cpp", findings=a.findings) for (_, path, _), a in zip(items, analyses)]
    return [cs.to_dict() for cs in sets.group(outcomes)]


def _assert_same_reparse(items, monkeypatch) -> int:
    """The incremental re-parse of each file's rewritten text has the fresh parse's errors; the count of
    files with fixes compared."""
    compared = 0
    for text, path, opts in items:
        seen = []
        real = analyzer.CppAnalyzer._reparsed

        def spy(self, new_text, byte_edits):
            root = real(self, new_text, byte_edits)
            seen.append((new_text, root))
            return root

        with monkeypatch.context() as m:
            m.setattr(analyzer, "INCREMENTAL_CHECK", True)
            m.setattr(analyzer.CppAnalyzer, "_reparsed", spy)
            source._ERROR_MEMO.clear()
            cpp.analyze(text, path, opts)
        for new_text, root in seen:
            assert root is not None, path
            fresh = source.parse_bytes(new_text.encode("utf-8", "surrogatepass")).root_node
            assert len(source.error_nodes(root)) == len(source.error_nodes(fresh)), path
            assert root.end_byte == fresh.end_byte and str(root) == str(fresh), path
            compared += 1
    source._ERROR_MEMO.clear()
    return compared


def _assert_equal(items, monkeypatch) -> dict:
    _assert_same_reparse(items, monkeypatch)
    got = _analyses(items, monkeypatch)
    base = got["all off"]
    base_sets = _change_sets(items, base)
    for name, analyses in got.items():
        for (_, path, _), a, b in zip(items, analyses, base):
            assert a == b, f"{path}: {name} differs from all off"
        assert _change_sets(items, analyses) == base_sets, name
    return got


def _fixture(name: str):
    meta = tomllib.loads((FIXTURES / f"{name}.toml").read_text(encoding="utf-8"))
    inp = next(FIXTURES.glob(f"{name}.in.*"))
    args = meta.get("args", [])
    target = args[args.index("--target") + 1] if "--target" in args else "0.1.8"
    opts = FrontEndOptions(rules=RULES, target=RULES.generation(target), source=RULES.legacy)
    return inp.read_bytes().decode("utf-8"), inp.name, opts


@pytest.mark.parametrize("name", [p.stem for p in sorted(FIXTURES.glob("*.toml"))])
def test_switches_change_nothing_on_fixtures(name, monkeypatch):
    text, path, opts = _fixture(name)
    _assert_equal([(text, path, opts), (text + PADDING, path, opts), (PADDING + text, path, opts)], monkeypatch)


def test_the_reparse_comparison_sees_fixes(monkeypatch):
    items = [_fixture(p.stem) for p in sorted(FIXTURES.glob("*.toml"))]
    assert _assert_same_reparse(items, monkeypatch) >= 20


def test_the_comparison_sees_sites():
    """The fixtures compared hold sites of every family (the comparison is not of empty analyses)."""
    codes = set()
    for p in sorted(FIXTURES.glob("*.toml")):
        codes |= {f.code for f in cpp.analyze(*_fixture(p.stem)).findings}
    assert {"CPA101", "CPA102", "CPA103", "CPA104", "CPA105", "CPA109", "CPA110", "CPA111"} <= codes


def _tree_items():
    opts = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)
    out = []
    for base in [CACHE / "tree", CACHE / "tree-git", REALCPP]:
        if not base.is_dir():
            continue
        for dirpath, _, names in os.walk(base):
            for n in sorted(names):
                if not n.endswith(files.CPP_SUFFIXES):
                    continue
                p = Path(dirpath) / n
                try:
                    raw = p.read_bytes()
                    text = raw.decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                if files.has_needle(raw):
                    out.append((text, str(p), opts))
    return sorted(out, key=lambda x: x[1])


@pytest.mark.slow
def test_switches_change_nothing_on_the_trees(monkeypatch):
    items = _tree_items()
    if not items:
        pytest.skip("no benchmark or realcpp tree on this machine (benchmarks/build_tree.sh)")
    got = _assert_equal(items, monkeypatch)
    assert any(a.findings for a in got["all on"])  # the trees hold sites, or the test shows little
    assert _assert_same_reparse(items, monkeypatch) > 10  # the re-parse comparison saw fixes


def test_switches_change_nothing_on_a_file_of_many_fixes(monkeypatch):
    """Sixty consumer branches and their builder: more fixes than the line-break list is built for, and overlap checks
    across several buckets of the index."""
    branch = ("void G::V{i}(const CallNode* op, std::ostream& os) {{\n"
              "  if (op->op.same_as(builtin::ptx_cp_async())) {{\n"
              "    ICHECK_EQ(op->args.size(), 5U);\n"
              "    std::string dst = PrintExpr(op->args[0]);\n    std::string dst_off = PrintExpr(op->args[1]);\n"
              "    std::string src = PrintExpr(op->args[2]);\n    std::string src_off = PrintExpr(op->args[3]);\n"
              "    std::string size = PrintExpr(op->args[4]);\n"
              "    this->stream << PrintCpAsyncAssembly(dst, dst_off, src, src_off, size);\n  }}\n}}\n\n")
    text = "".join(branch.format(i=i) for i in range(60))
    opts = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)
    got = _assert_equal([(text, "codegen.cc", opts)], monkeypatch)
    assert sum(f.fix is not None for f in got["all on"][0].findings) >= 17, got["all on"][0].findings[:2]


def test_switches_change_nothing_on_a_function_of_many_builders(monkeypatch):
    """Builders of every kind the scope questions read, many to a function: data named by Var declarations, by
    parameters and by a class's fields, by names declared nowhere (left for a person); arrays declared with their
    list, assigned a list, appended to; an Op variable assigned again before some builders and inside a branch
    before others; access pointers held in locals declared before the use, after it, and twice (the first declaration in the text counts)."""
    parts = ["namespace tvm {\nnamespace tl {\n", "class Emitter {\n  Var fdst_, fsrc_;\n"]
    body = ["  Stmt Many(Var pdst, Var psrc, Buffer buf) {\n    Array<Stmt> seq;\n    Op op = builtin::ptx_cp_async();\n"]
    for i in range(24):
        k = i % 8
        if k == 0:
            body.append(f"    Var d{i}(\"d\"), s{i}(\"s\");\n    seq.push_back(Evaluate(Call(DataType::Handle(), "
                        f"builtin::ptx_cp_async(), {{d{i}, o{i}, s{i}, so{i}, 16}})));\n")
        elif k == 1:
            body.append(f"    seq.push_back(Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), "
                        f"{{pdst, o{i}, psrc, so{i}, 8}})));\n")
        elif k == 2:
            body.append(f"    seq.push_back(Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), "
                        f"{{fdst_, o{i}, fsrc_, so{i}, 4}})));\n")
        elif k == 3:
            body.append(f"    seq.push_back(Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), "
                        f"{{nowhere{i}, o{i}, s{i}, so{i}, 16}})));\n")
        elif k == 4:
            body.append(f"    Array<PrimExpr> a{i} = {{buf->data, o{i}, buf->data, so{i}, 16}};\n"
                        f"    a{i}.push_back(pred);\n"
                        f"    seq.push_back(Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), a{i})));\n")
        elif k == 5:
            body.append(f"    Array<PrimExpr> b{i};\n    b{i} = {{buf->data, o{i}, buf->data, so{i}, 16}};\n"
                        f"    if (flag) {{\n      op = builtin::ptx_cp_async();\n    }}\n"
                        f"    seq.push_back(Evaluate(Call(DataType::Handle(), op, b{i})));\n")
        elif k == 6:
            body.append(f"    op = Op::Get(\"tir.other\");\n    op = builtin::ptx_cp_async();\n"
                        f"    seq.push_back(Evaluate(Call(DataType::Handle(), op, {{buf->data, o{i}, buf->data, so{i}, "
                        f"16}})));\n")
        else:
            body.append(f"    PrimExpr ap{i} = tvm_access_ptr(t, buf->data, o{i}, n, 2);\n"
                        f"    seq.push_back(Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), "
                        f"{{ap{i}, late{i}, buf->data, so{i}, 16}})));\n    PrimExpr late{i} = tvm_access_ptr(t, buf->data, "
                        f"0, n, 1);\n    PrimExpr ap{i} = o{i};\n"
                        f"    {{\n      PrimExpr w{i} = o{i};\n    }}\n    PrimExpr w{i} = tvm_access_ptr(t, buf->data, 0, n, 2);\n"
                        f"    seq.push_back(Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), "
                        f"{{w{i}, w{i}, buf->data, so{i}, 16}})));\n")
    body.append("    return SeqStmt(seq);\n  }\n")
    text = "".join(parts + body) + "};\n}  // namespace tl\n}  // namespace tvm\n"
    opts = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)
    got = _assert_equal([(text, "builders.cc", opts)], monkeypatch)
    findings = got["all on"][0].findings
    assert len(findings) >= 21 and sum(f.fix is not None for f in findings) >= 3, findings[:3]
    assert any(f.fix is None for f in findings)
    lines = text.split("\n")
    assert sum("{w" in lines[f.line - 1] for f in findings) == 3  # their first declaration is no access pointer


def _consumer_shapes(n: int) -> str:
    """Consumer branches deep inside one another: ``if``s nested without braces and with them, an ``else if`` chain,
    and long ``<<`` and ``+`` chains of ``args`` reads, with offset declarations, ``Downcast<Var>`` reads and size
    tests at several depths (the reads differ from level to level, so each branch reads something of its own)."""
    test = "op->op.same_as(builtin::ptx_cp_async())"
    out = ["namespace tvm {\nnamespace codegen {\n"]
    nested = "".join("  " * (i + 1) + f"if ({test})\n" for i in range(n))
    out.append(f"void Nested(const CallNode* op, std::ostream& os) {{\n{nested}    os << op->args[4];\n}}\n")
    braced = []
    for i in range(n):
        inner = ["ICHECK_EQ(op->args.size(), 5);", "PrimExpr dst_offset = op->args[1] * 2;",
                 "Var v = Downcast<Var>(op->args[0]);", "os << op->args[i];"][i % 4]
        braced.append("  " * (i + 1) + f"if ({test}) {{\n" + "  " * (i + 2) + inner + "\n")
    braced.append("".join("  " * (i + 1) + "}\n" for i in reversed(range(n))))
    out.append("void Braced(const CallNode* op, std::ostream& os, int i) {\n" + "".join(braced) + "}\n")
    chain = [f"  if ({test}) {{\n    os << op->args[4];\n  }}"]
    chain += [f" else if ({test}) {{\n    os << op->args[{i % 6}];\n    auto src_offset = f(op->args[3]);\n  }}"
              for i in range(1, n)]
    out.append("void Chain(const CallNode* op, std::ostream& os) {\n" + "".join(chain) + "\n}\n")
    reads = " << ".join(f"op->args[{i % 6}]" for i in range(4 * n))
    sums = " + ".join(f"op->args[{i % 5}].as<VarNode>()->x" for i in range(4 * n))
    out.append(f"void Shift(const CallNode* op, std::ostream& os) {{\n  if ({test}) {{\n    os << {reads};\n"
               f"    int s = {sums};\n  }}\n}}\n")
    out.append("}  // namespace codegen\n}  // namespace tvm\n")
    return "".join(out)


def test_switches_change_nothing_on_consumers_deep_inside_one_another(monkeypatch):
    text = _consumer_shapes(40)
    opts = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)
    got = _assert_equal([(text, "printer.cc", opts)], monkeypatch)
    findings = got["all on"][0].findings
    fns = {text.count("\n", 0, text.find(f"void {f}(")) + 1: f for f in ("Nested", "Braced", "Chain", "Shift")}
    starts = sorted(fns)
    hit = {fns[max(s for s in starts if s <= f.line)] for f in findings}
    assert hit == set(fns.values()), hit  # every shape holds sites
    assert len(findings) >= 80  # each nested and chained branch, and the braced ones that read the legacy layout


def test_the_nodes_around_any_occurrence_are_those_around_each(monkeypatch):
    """source.nodes_around_any against the union of source.nodes_around, on the shapes above, with the quota hit
    early (from the first range), late and never."""
    text = _consumer_shapes(30)
    root = source.parse_bytes(text.encode()).root_node
    name = b"ptx_cp_async"
    data = text.encode()
    occ = [i for i in range(len(data)) if data.startswith(name, i)]
    ranges = [(o, o + len(name)) for o in occ]
    types = analyzer._AROUND_NAME
    want = sorted({n.id for around in source.nodes_around(root, types, ranges) for n in around})
    for per, floor in ((0, 0), (64, 4096), (10**9, 10**9), (1, 200)):
        monkeypatch.setattr(source, "AROUND_QUOTA_PER_RANGE", per)
        monkeypatch.setattr(source, "AROUND_QUOTA", floor)
        got = source.nodes_around_any(root, types, ranges)
        assert sorted(n.id for n in got) == want and len(got) == len(want), (per, floor)


def test_switches_change_nothing_on_many_helper_declarations(monkeypatch):
    """Printer helpers of the legacy shape declared many times under a few names, some with a definition that tests
    its offsets, some with a pointer-only overload that forwards "" (defined, or only declared), some with an overload
    of the pointer-only arity already there, and callers of each."""
    params = ("const std::string& dst, const std::string& dst_offset, const std::string& src, "
              "const std::string& src_offset, const std::string& size")
    parts = ["#include <string>\nnamespace tvm {\nnamespace codegen {\n// ptx_cp_async\n"]
    for name in ("PrintCpAsyncAssembly", "PrintCopy", "EmitAsync", "PrintLoad"):
        for i in range(12):
            parts.append(f"std::string {name}({params});\n")
        if name == "PrintCopy":
            parts.append(f"std::string {name}({params}) {{\n  if (dst_offset.empty() && src_offset == \"\") "
                         f"return dst + src;\n  return dst + \" + \" + dst_offset + src + src_offset + size;\n}}\n")
        if name == "EmitAsync":
            parts.append(f"std::string {name}(const std::string& dst, const std::string& src, const std::string& size) "
                         f"{{\n  return {name}(dst, \"\", src, \"\", size);\n}}\n")
        if name == "PrintLoad":
            parts.append(f"std::string {name}(const std::string& a, const std::string& b, const std::string& c);\n")
        for i in range(6):
            parts.append(f"void Use{name}{i}() {{ {name}(a, b, c, d, e); }}\n")
    parts.append("}  // namespace codegen\n}  // namespace tvm\n")
    text = "".join(parts)
    opts = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)
    got = _assert_equal([(text, "helpers.cc", opts)], monkeypatch)
    findings = got["all on"][0].findings
    assert len(findings) >= 36 and any(f.fix is not None for f in findings) and any(f.fix is None for f in findings)
    assert not [f for f in findings if "EmitAsync" in f.message]  # its forwarding overload: migrated already


def _helper_arrays(n: int, outside: bool) -> str:
    """Builders whose arguments a helper function of the file returns, many helpers: one called twice, one also
    used otherwise, one defined twice; builders in functions that already use a name a hoist would declare; and
    (``outside``) such a name declared outside every function, which stops every hoist of the file."""
    parts = ["namespace tvm {\nnamespace tl {\n"]
    if outside:
        parts.append("static int dst_access_ptr = 0;\n")
    for i in range(n):
        parts.append(f"Array<PrimExpr> MakeArgs{i}(const Buffer& s, const Buffer& l) {{\n"
                     f"  return {{s->data, {i}, l->data, {i} * 2, 16}};\n}}\n")
        if i % 5 == 4:
            parts.append(f"Array<PrimExpr> MakeArgs{i}(const Buffer& s);\n")
        use = f"  auto keep = MakeArgs{i};\n" if i % 6 == 5 else ""
        clash = "  int src_dtype = 0;\n" if i % 4 == 3 else ""
        parts.append(f"Stmt Emit{i}(const Buffer& s, const Buffer& l) {{\n{clash}{use}"
                     f"  return Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), MakeArgs{i}(s, l)));\n}}\n")
        if i % 7 == 0:
            parts.append(f"Stmt Again{i}(const Buffer& s, const Buffer& l) {{\n"
                         f"  return Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), MakeArgs{i}(l, s)));\n}}\n")
        parts.append(f"Stmt Inline{i}(const BufferStoreNode* store, const BufferLoadNode* load, int bytes) {{\n{clash}"
                     f"  ICHECK(GetPointerType(store->buffer->data->type_annotation).has_value());\n"
                     f"  return Evaluate(Call(store->buffer->dtype, builtin::ptx_cp_async(),\n"
                     f"                       {{store->buffer->data, store->indices[{i}], load->buffer->data,\n"
                     f"                        load->indices[0], PrimExpr(bytes)}}));\n}}\n")
    parts.append("}  // namespace tl\n}  // namespace tvm\n")
    return "".join(parts)


def test_switches_change_nothing_on_helper_arrays_and_hoists(monkeypatch):
    opts = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)
    items = [(_helper_arrays(20, outside), f"helpers{int(outside)}.cc", opts) for outside in (False, True)]
    got = _assert_equal(items, monkeypatch)
    free, blocked = got["all on"]
    assert len(free.findings) >= 40 and any(f.fix is not None for f in free.findings)
    hoists = [sum("DataType src_dtype" in e.replacement for f in a.findings if f.fix for e in f.fix.edits)
              for a in (free, blocked)]
    assert hoists[0] >= 10 and hoists[1] == 0, hoists  # names in use in a function, or outside every one, block it


def test_the_column_padding_is_the_same_with_and_without_its_memo(monkeypatch):
    """source.PAD_MEMO (CPASYNC_MIGRATE_CPP_PAD_MEMO): each line's padding made once and sliced per site, against
    the padding built a character at a time, at every offset of lines with tabs, wide and astral characters."""
    import random

    rng = random.Random(3)
    alphabet = ["\t", " ", "a", "{", "é", "中", "😀", ";"]
    text = "\n".join("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60))) for _ in range(40)) + "\n"
    src = source.Source(text)
    offsets = range(len(text))
    monkeypatch.setattr(source, "PAD_MEMO", False)
    off = [src.column_pad(o) for o in offsets]
    monkeypatch.setattr(source, "PAD_MEMO", True)
    assert [src.column_pad(o) for o in offsets] == off
    assert any("\t" in p for p in off) and any(len(p) > 20 for p in off)


def test_switches_change_nothing_on_many_op_variables(monkeypatch):
    """Op variables and lambdas holding the op, many to a function: each is an op word; builders and consumers
    through them, and names that hold a word inside a longer one."""
    parts = ["namespace tvm {\nnamespace tl {\nStmt Many(const Buffer& s, const Buffer& l, const CallNode* op) {\n"]
    for i in range(60):
        parts.append(f"  Op o{i} = builtin::ptx_cp_async();\n")
        parts.append(f"  auto l{i} = [&]() {{ return Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), "
                     f"{{s->data, {i}, l->data, {i}, 16}})); }};\n")
        if i % 3 == 0:
            parts.append(f"  seq.push_back(Evaluate(Call(DataType::Handle(), o{i}, {{s->data, {i}, l->data, 0, 8}})));\n")
        if i % 4 == 1:
            parts.append(f"  if (op->op.same_as(o{i})) {{\n    os << op->args[4];\n  }}\n")
        if i % 5 == 2:
            parts.append(f"  foo{i}(xo{i}y, Call(DataType::Handle(), xo{i}, {{a, b, c, d, e}}));\n")
    parts.append("  return SeqStmt(seq);\n}\n}  // namespace tl\n}  // namespace tvm\n")
    text = "".join(parts)
    opts = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)
    got = _assert_equal([(text, "ops.cc", opts)], monkeypatch)
    assert len(got["all on"][0].findings) >= 60


def test_the_word_pattern_finds_what_the_word_search_finds():
    """analyzer._trie_pattern against analyzer._holds on random words (prefixes of one another, regular-expression
    characters) and texts, over many ranges."""
    import random
    import re

    rng = random.Random(5)
    for _ in range(1500):
        words = list({bytes(rng.choice(b"ab_(.") for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(2, 9))})
        data = bytes(rng.choice(b"ab_(. c") for _ in range(rng.randint(0, 30)))
        search = re.compile(analyzer._trie_pattern(words)).search
        for lo in range(0, len(data) + 1, 3):
            for hi in range(lo, len(data) + 1, 2):
                assert analyzer._holds(data, words, lo, hi) == (search(data, lo, hi) is not None), (words, data, lo, hi)
