"""C++ laid out like the file (cpp/layout.py, cpp/hoist.py, clang_format.py).

The clang-format wheel (the ``test`` extra) is the oracle: a C++ fixture input that clang-format accepts is
still accepted after migration, and the layout of a statement is clang-format's.  Without the wheel those
tests skip; the tool itself never runs clang-format.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cpasync_migrate.clang_format import parse
from cpasync_migrate.cpp import analyze
from cpasync_migrate.cpp.layout import Style, layout_statement
from cpasync_migrate.findings import FrontEndOptions, apply_edits
from cpasync_migrate.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "cpp"
LLVM80 = "{BasedOnStyle: LLVM, ColumnLimit: 80}"
RULES = load_rules()
OPTS = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)


def _clang_format() -> str | None:
    here = Path(sys.executable).parent / "clang-format"
    return str(here) if here.exists() else shutil.which("clang-format")


CF = _clang_format()
needs_cf = pytest.mark.skipif(CF is None, reason="the clang-format wheel is not installed (pip install clang-format)")


def _clean(text: str, style: str = LLVM80) -> bool:
    r = subprocess.run([CF, f"--style={style}", "--assume-filename=x.cc", "--dry-run", "-Werror"], input=text,
                       capture_output=True, text=True, timeout=60)
    return r.returncode == 0


def _formatted(stmt: str, indent: int) -> str:
    depth = indent // 2
    src = "void f() {\n" + "{\n" * (depth - 1) + stmt + "\n" + "}\n" * (depth - 1) + "}\n"
    out = subprocess.run([CF, f"--style={LLVM80}", "--assume-filename=x.cc"], input=src, capture_output=True,
                         text=True, timeout=60).stdout
    return "\n".join(out.splitlines()[depth:-depth]).lstrip(" ")


def _migrate(text: str, opts=OPTS) -> str:
    res = analyze(text, "x.cc", opts)
    assert res.error is None
    return apply_edits(text, [e for f in res.findings if f.fix for e in f.fix.edits])


# ---------------------------------------------------------------- the layout against clang-format
STATEMENTS = [
    (10, "Array<PrimExpr> args = {dst_access_ptr, src_access_ptr, PrimExpr(bytes)};"),
    (10, "args = {dst_access_ptr, src_access_ptr, PrimExpr(bytes), predicate_value, xx};"),
    (10, "return Evaluate(Call(store->buffer->dtype, tvm::tir::builtin::ptx_cp_async(), "
         "{dst_access_ptr, src_access_ptr, PrimExpr(bytes)}));"),
    (10, "return Evaluate(Call(store->buffer->dtype, tvm::tir::builtin::ptx_cp_async(), "
         "{dst_access_ptr, src_access_ptr, PrimExpr(bytes), predicate_value}));"),
    (10, "DataType dst_dtype = GetPointerType(store->buffer->data->type_annotation).value();"),
    (10, "PrimExpr dst_access_ptr = Call(DataType::Handle(), tvm::tir::builtin::tvm_access_ptr(), "
         "{TypeAnnotation(dst_dtype), store->buffer->data, mul(dst_offset, PrimExpr(index_factor)), "
         "floordiv(PrimExpr(bytes), dst_dtype.bytes()), 2});"),
    (10, "tvm::PrimExpr src_access_ptr = tir::Call(tvm::DataType::Handle(), tir::builtin::tvm_access_ptr(), "
         "{tir::TypeAnnotation(src_dtype), src->data, src_off, tvm::floordiv(tvm::PrimExpr(bytes), "
         "src_dtype.bytes()), 1});"),
    (6, "PrimExpr rebased_dst = Call(DataType::Handle(), builtin::tvm_access_ptr(), {dst_access_ptr->args[0], "
        "merged_buf_var_, extra_offset + offset, dst_access_ptr->args[3], dst_access_ptr->args[4]});"),
    (6, "return Call(dtype, op->op, {rebased_dst, op->args[1], op->args[2], op->args[3]});"),
    (2, "x = Foo(Bar(aaaaaaaaaaaa, bbbbbbbbbbbbbbbb), Baz(cccccccccccccccc, dddddddddddddd, eeeeeeeeeeeeeeeeee));"),
    (4, "y = Foo(Evaluate(buf_strides->data, tvm_if_then_else, make_zero_DataType_Handle, aaaaaaaaaaaaaaa, nop));"),
    (8, "thread_range.Set(th->var, Range::FromMinExtent(IntImm(dtype, min_value), IntImm(dtype, extent)));"),
    (12, "return Evaluate(Call(store->buffer->dtype, builtin::ptx_cp_async(), {Call(DataType::Handle(), "
         "builtin::tvm_access_ptr(), {TypeAnnotation(t), a->data, o, floordiv(PrimExpr(n), t.bytes()), 2}), "
         "Call(DataType::Handle(), builtin::tvm_access_ptr(), {TypeAnnotation(u), b->data, p, "
         "floordiv(PrimExpr(n), u.bytes()), 1}), PrimExpr(n)}));"),
]


@needs_cf
@pytest.mark.parametrize("indent,stmt", STATEMENTS)
def test_a_statement_is_laid_out_as_clang_format_lays_it_out(indent, stmt):
    got = layout_statement(stmt, indent, Style())
    assert got is not None
    assert got == _formatted(stmt, indent)


# stream statements of printers: the legacy ones upstream's printers hold (clang-format clean there) and
# the shapes their rewrites leave, a break after a literal ending in a newline, a call operand
STREAMS = [
    (6, 'this->stream << "tl::cp_async_gs<" << size << ">(" << dst << "+" << dst_offset << ", " << src << "+" '
        '<< src_offset << ");\\n";'),
    (6, 'this->stream << "tl::cp_async_gs_conditional<" << size << ">(" << dst << "+" << dst_offset << ", " << src '
        '<< "+" << src_offset << ", " << condition << ");\\n";'),
    (6, 'stream << "tl.cp_async_gs(" << size << ", " << dst << ", " << dst_offset << ", " << src << ", " '
        '<< src_offset << ")\\n";'),
    (6, 'this->stream << "tl::cp_async_gs<" << size << ">(" << dst << ", " << src << ");\\n";'),
    (6, 'this->stream << "tl::cp_async_gs_conditional<" << size << ">(" << dst << ", " << src << ", " << condition '
        '<< ");\\n";'),
    (6, 'stream << "tl.cp_async_gs(" << size << ", " << dst << ", " << src << ")\\n";'),
    (6, 'stream << "tl.cp_async_gs_conditional(" << size << ", " << dst << ", " << src << ", " << condition '
        '<< ")\\n";'),
    (10, 'this->stream << "tl::cp_async_gs<" << size << ">(" << dst << ", " << src << ");\\n";'),
    (12, 'this->stream << "tl::cp_async_gs_conditional<" << size << ">(" << dst << ", " << src << ", " '
         '<< this->PrintExpr(op->args[3]) << ");\\n";'),
    (4, 'os << "a\\n" << b << "ccccccccccccccccccccccccccccccc" << ddddddddddddddddddddd << eeeeeeeeeeeeeeeeeeeeeeeee '
        '<< f << "g";'),
    (8, 'os << "xxxxxxxxxxxxxxxxxxxxxxxxxxxx" << yyyyyyyyyyy << PrintCpAsyncAssembly(dst, src, size) << zz;'),
    (2, 'os << aaaaaaaaaaaaaaaaaaaa << bbbbbbbbbbbbbbbbbbbbbbbbb << ccccccccccccccccccccccccc << ddddddddddddddddddddd '
        '<< eeeeeeeeeeeeeeeeeeeeeeeeee << fffffffffffffffffffffffffff << g;'),
    (4, 'os << "for (int i = 0; i < " << num_elem << "; ++i) {\\n";'),  # a literal's spaces are its value
    (4, "os << a << std::endl << b;"),  # fits: the break after endl is only forced on a broken line
    (6, 'stream << "hip_copy<" << bytes << ">(" << d << "+" << d_offset << ", " << s << "+" << s_offset '
        '<< ");\\n";'),  # the line would end at column 81
]


@needs_cf
@pytest.mark.parametrize("indent,stmt", STREAMS)
def test_a_stream_statement_is_laid_out_as_clang_format_lays_it_out(indent, stmt):
    got = layout_statement(stmt, indent, Style())
    assert got is not None
    assert got == _formatted(stmt, indent)


def test_stream_shapes_the_layout_does_not_model_are_declined():
    long = " << bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb;"
    assert layout_statement('os << "size=" << aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' + long, 4, Style()) is None  # a label
    assert layout_statement("os << f(g(x))" + long, 4, Style()) is None  # a call of a call
    assert layout_statement("os << (a ? b : c)" + long, 4, Style()) is None  # a conditional
    assert layout_statement("s() << aaaaaaaaaaaaaaa" + long, 4, Style()) is None  # the head is a call
    assert layout_statement('os << "' + "x" * 90 + '";', 4, Style()) is None  # too wide for any layout
    # a break before the first "<<" would save a line: clang-format weighs it, the layout does not
    names = " << ".join(c * 19 for c in "abcdefghij")
    assert layout_statement("this->a_rather_long_stream_name_here << " + names + ";", 4, Style()) is None
    assert layout_statement('os << "x" << y;', 4, Style(column_limit=0)) == 'os << "x" << y;'


_PRINTER = """\
void G::VisitExpr_(const CallNode *op, std::ostream &os) {
  if (op->op.same_as(builtin::ptx_cp_async())) {
    std::string dst = PrintExpr(op->args[0]);
    std::string dst_offset = PrintExpr(op->args[1]);
    std::string src = PrintExpr(op->args[2]);
    std::string src_offset = PrintExpr(op->args[3]);
    std::string size = PrintExpr(op->args[4]);
    if (op->args.size() == 5) {
      PRINT
    }
  }
}
"""


def test_a_printed_statement_the_layout_declines_keeps_its_edits_in_place():
    stmt = ('stream << "copy<" << size << ">(" << dst << "+" << dst_offset << ", "\n'
            '             << src << "+" << src_offset << ", " << Wrap(F(op)) << ");\\n";')
    new = _migrate(_PRINTER.replace("PRINT", stmt))
    # the operands are cut out where they were; the line break of the original stays
    assert ('      stream << "copy<" << size << ">(" << dst << ", "\n'
            '             << src << ", " << Wrap(F(op)) << ");\\n";') in new


def test_a_printed_statement_is_written_again_laid_out():
    stmt = ('stream << "copy<" << size << ">(" << dst << "+" << dst_offset << ", "\n'
            '             << src << "+" << src_offset << ");\\n";')
    new = _migrate(_PRINTER.replace("PRINT", stmt))
    assert '      stream << "copy<" << size << ">(" << dst << ", " << src << ");\\n";\n' in new
    assert "if (op->args.size() == 3)" in new and "op->args[2]" in new


def test_shapes_the_layout_does_not_model_are_declined():
    assert layout_statement("x = a ? b : c;", 2, Style()) is None  # a conditional
    assert layout_statement("x = f(a, /* c */ b);", 2, Style()) is None  # a comment
    assert layout_statement("f(g(x).value().bytes(aaaaaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, "
                            "cccccccccccccccc));", 2, Style()) is None  # a call chain that must break
    assert layout_statement("x = {a, b,};", 2, Style()) is None  # a trailing comma
    assert layout_statement("y = 1;", 2, Style(column_limit=0)) == "y = 1;"  # no limit: one line


def test_literals_are_kept_verbatim():
    assert layout_statement('x = Foo(StringImm("a  ( b ) :: c"), y);', 2, Style()) == \
        'x = Foo(StringImm("a  ( b ) :: c"), y);'
    assert layout_statement("x = Foo(c == ' ', y);", 2, Style()) == "x = Foo(c == ' ', y);"


def test_the_column_limit_is_read_from_the_style():
    stmt = "return Call(dtype, op->op, {rebased_dst, op->args[1], op->args[2], op->args[3]});"
    assert "\n" not in layout_statement(stmt, 6, Style(column_limit=120))
    assert "\n" in layout_statement(stmt, 6, Style(column_limit=80))


def test_clang_format_files_are_read():
    assert parse("---\nBasedOnStyle: LLVM\nIndentWidth: 2\nColumnLimit: 80\n") == Style(80, 4)
    assert parse("BasedOnStyle: Microsoft\n") == Style(120, 4)
    assert parse("BasedOnStyle: Google\nColumnLimit: 100  # wide\nContinuationIndentWidth: 8\n") == Style(100, 8)
    # a section for another language is skipped; the C++ one wins
    assert parse("---\nLanguage: JavaScript\nColumnLimit: 120\n---\nLanguage: Cpp\nColumnLimit: 90\n") == Style(90, 4)
    assert parse("") == Style(80, 4)


# ---------------------------------------------------------------- fixtures stay clean
def _fixture_pairs():
    for p in sorted(FIXTURES.glob("*.in.*")):
        yield p


@needs_cf
def test_every_clean_fixture_input_stays_clean_after_migration():
    import tomllib

    clean = 0
    for p in _fixture_pairs():
        text = p.read_text()
        if not _clean(text):
            continue
        clean += 1
        out = p.with_name(p.name.replace(".in.", ".out."))
        assert _clean(out.read_text()), f"{out.name}: the expected output is not clang-format clean"
        meta = tomllib.loads(p.with_name(p.name.split(".in.")[0] + ".toml").read_text())
        target = meta["args"][meta["args"].index("--target") + 1]
        opts = FrontEndOptions(rules=RULES, target=RULES.generation(target), source=RULES.legacy)
        assert _clean(_migrate(text, opts)), f"{p.name}: clean before migration, not after"
    assert clean >= 1  # layout_clean.in.cc at least


# ---------------------------------------------------------------- hoisting
_SITE = """\
Stmt F(const BufferStoreNode *store, const BufferLoadNode *load, int bytes) {
  ICHECK(GetPointerType(store->buffer->data->type_annotation).has_value());
  return Evaluate(Call(store->buffer->dtype, builtin::ptx_cp_async(),
                       {store->buffer->data, OFFSET, load->buffer->data,
                        load->indices[0], PrimExpr(bytes)}));
}
"""


def test_pure_operands_are_named_before_the_statement():
    new = _migrate(_SITE.replace("OFFSET", "store->indices[0]"))
    assert "  DataType dst_dtype =\n      GetPointerType(store->buffer->data->type_annotation).value();" in new
    assert "{dst_access_ptr, src_access_ptr, PrimExpr(bytes)}" in new
    # each pointer type is written once, in its declaration
    assert new.count("GetPointerType(store->buffer->data->type_annotation).value()") == 1


def test_an_offset_with_side_effects_keeps_the_access_pointers_inline():
    new = _migrate(_SITE.replace("OFFSET", "NextOffset(store)"))
    assert "dst_access_ptr" not in new and "dst_dtype" not in new
    assert "NextOffset(store)" in new and new.count("NextOffset(") == 1


def test_a_name_in_use_keeps_the_access_pointers_inline():
    src = _SITE.replace("OFFSET", "store->indices[0]").replace("int bytes) {", "int bytes) {\n  int src_dtype = 0;")
    new = _migrate(src)
    assert "DataType src_dtype" not in new and "PrimExpr dst_access_ptr" not in new


def test_a_statement_that_is_not_in_a_block_keeps_the_access_pointers_inline():
    src = _SITE.replace("OFFSET", "store->indices[0]").replace("  return Evaluate(", "  if (bytes)\n  return Evaluate(")
    new = _migrate(src)
    assert "dst_access_ptr" not in new and "tvm_access_ptr" in new


# ---------------------------------------------------------------- upstream's legacy revision
MIRROR = Path(os.environ.get("CPASYNC_TILELANG_MIRROR", "/work/.mirror/tile-ai+tilelang/repo"))
# the files the builder, merge-pass and printer rewrites change (lines of clang-format diff after the
# migration before the layout covered them: 78, 12, 0, 0, 7, 7, 8; now none)
LAID_OUT = ["src/transform/inject_ptx_async_copy.cc", "src/transform/merge_shared_memory_allocations.cc",
            "src/target/ptx.cc", "src/target/ptx.h", "src/target/codegen_cuda.cc", "src/target/codegen_hip.cc",
            "src/target/codegen_cutedsl.cc"]


@pytest.mark.realcpp
@needs_cf
@pytest.mark.skipif(os.environ.get("CPASYNC_REALCPP") != "1", reason="opt-in: set CPASYNC_REALCPP=1")
@pytest.mark.skipif(not (MIRROR / "HEAD").exists(), reason="no mirror of tile-ai/tilelang")
def test_upstream_legacy_files_stay_clang_format_clean(tmp_path):
    subprocess.run(["git", "-C", str(MIRROR), "archive", "6fd0bd31f^", "src", "tilelang", ".clang-format",
                    "-o", str(tmp_path / "t.tar")], check=True, timeout=300)
    subprocess.run(["tar", "-xf", str(tmp_path / "t.tar"), "-C", str(tmp_path)], check=True)
    style = f"file:{tmp_path / '.clang-format'}"
    before = {f: (tmp_path / f).read_text() for f in LAID_OUT}
    assert all(_clean(t, style) for t in before.values())
    r = subprocess.run([sys.executable, "-m", "cpasync_migrate", "--target", "0.1.8", "--unsafe-fixes", "--no-cache",
                        "src", "tilelang"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode in (0, 1), r.stderr
    for f in LAID_OUT:
        after = (tmp_path / f).read_text()
        assert after != before[f], f"{f} was not rewritten"
        assert _clean(after, style), f"{f}: clang-format clean before migration, not after"


@needs_cf
def test_without_get_pointer_type_the_pointer_type_is_named_in_two_steps_and_stays_clean():
    src = ("Stmt F(const BufferStoreNode *store, const BufferLoadNode *load, int bytes) {\n"
           "  return Evaluate(\n"
           "      Call(store->buffer->dtype, builtin::ptx_cp_async(),\n"
           "           {store->buffer->data, store->indices[0], load->buffer->data,\n"
           "            load->indices[0], PrimExpr(bytes)}));\n"
           "}\n")
    assert _clean(src)
    new = _migrate(src)
    # the same two Downcasts as the inline form, in the same order, each named once
    assert ("  PointerType dst_pointer_type =\n      Downcast<PointerType>(store->buffer->data->type_annotation);\n"
            "  DataType dst_dtype =\n      Downcast<PrimType>(dst_pointer_type->element_type)->dtype;\n") in new
    assert "GetPointerType" not in new
    assert _clean(new)


def test_the_layout_is_the_same_with_and_without_its_memo(monkeypatch):
    """layout.MEMO (CPASYNC_MIGRATE_CPP_LAYOUT_MEMO): the search's breaks remembered by a statement's shape.  Each
    statement above, and copies whose names are respelled at the same length (same shape: a memo hit) and at other
    lengths (new shapes), at several indents and column limits, laid out in one order with the memo (warm from the
    statements before) and without it; and a memo that may only hold two shapes."""
    import random

    from cpasync_migrate.cpp import layout

    rng = random.Random(7)

    def respell(stmt: str, same: bool) -> str:
        def one(m):
            w = m.group(0)
            if w in ("return", "Call", "Array", "PrimExpr", "DataType", "Evaluate", "builtin", "tir", "tvm"):
                return w
            n = len(w) if same else max(1, len(w) + rng.choice((-3, -1, 2, 9)))
            return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))

        return re.sub(r"\b[a-z_][a-z_0-9]*\b", one, stmt)

    cases = []
    for indent, stmt in [*STATEMENTS, *STREAMS]:
        for s in (stmt, respell(stmt, True), respell(stmt, True), respell(stmt, False)):
            for ind in (indent, indent + 4):
                for limit in (80, 100):
                    cases.append((s, ind, limit))
    rng.shuffle(cases)

    def laid(memo: bool, size: int) -> list:
        monkeypatch.setattr(layout, "MEMO", memo)
        monkeypatch.setattr(layout, "_MEMO_SIZE", size)
        monkeypatch.setattr(layout, "_SEARCHED", {})
        out = [layout_statement(s, ind, Style(column_limit=limit)) for s, ind, limit in cases]
        return out + [layout_statement(s, ind, Style(column_limit=limit)) for s, ind, limit in cases]

    off = laid(False, 512)
    assert laid(True, 512) == off
    assert laid(True, 2) == off
    assert sum(x is not None for x in off) > len(off) // 2 and len(set(off)) > 20


@pytest.mark.parametrize("open_,close", [("(", ")"), ("f(", ")")])
def test_a_statement_whose_search_outgrows_its_bounds_is_declined(open_, close):
    """Brackets nested deep around one argument grow the search about 1.8 times per level (80 levels in a 400-byte
    statement took 18 s and 2 GB): past the bounds on states visited, queued and the levels they hold, the layout
    declines and the rewrite keeps its own text; the same statement nested four deep is laid out."""
    def stmt(depth):
        return ("return Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), {store->buffer->data, "
                + open_ * depth + "x" + close * depth + ", load->buffer->data, load->indices[0], PrimExpr(16)}));")

    assert layout_statement(stmt(4), 2, Style()) is not None
    for depth in (40, 80):
        assert layout_statement(stmt(depth), 2, Style()) is None
