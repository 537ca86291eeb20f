"""The Python front end's decisions apart from any parse tree (``python/decide/``): each pass reads facts with its
own parser and asks one module what they mean; the modules import no parser."""
import subprocess
import sys

import pytest

from cpasync_migrate.engine import RunSettings, front_end_options
from cpasync_migrate.python.decide import access_ptr as ap

O18 = front_end_options(RunSettings(mode="check", target="0.1.8"))
O19 = front_end_options(RunSettings(mode="check", target="0.1.9"))
F16, F32, U8 = ap.PointerType("float16", 2, "'float16'"), ap.PointerType("float32", 4), ap.PointerType("uint8", 1)


def no_lanes():
    return None


def test_decision_modules_import_no_parser():
    """Importing every decision module loads no libcst (the fast pass asks them without it)."""
    code = ("import sys\nimport cpasync_migrate.python.decide.access_ptr\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'libcst'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_size_warning_bytes():
    g = O18.target
    assert ap.size_warning(g, 16, F16, F16, no_lanes) is None
    assert ap.size_warning(g, 12, F16, F16, no_lanes) == "size 12 bytes is not a cp.async width (4/8/16) under 0.1.8"
    assert ap.size_warning(g, 6, F32, F16, no_lanes) == (
        "size 6 bytes is not a whole number of float32 elements of its access pointer")
    # a pointer of unknown type, or no literal size: no warning
    assert ap.size_warning(g, 3, ap.PointerType(None, None), F16, no_lanes) is None
    assert ap.size_warning(g, None, F16, F16, no_lanes) is None
    assert ap.size_warning(g, 3, None, F16, no_lanes) is None


def test_size_warning_elements_and_lanes():
    g = O19.target
    assert ap.size_warning(g, 8, F16, F16, no_lanes) is None  # 16 bytes
    assert ap.size_warning(g, 16, F16, F16, no_lanes) == (
        "size 16 means 16 float16 elements = 32 bytes under 0.1.9, not a cp.async width (4/8/16); if it was "
        "written for 0.1.8 with a byte count, run with --from 0.1.8 to convert it to 8 elements")
    assert ap.size_warning(g, 4, F16, U8, no_lanes) == (
        "the pointer types float16 and uint8 differ in width; 0.1.9 derives the copy width from each side and "
        "needs them equal")
    asked = []
    # one element per lane of an 8-lane widening loop: one 16-byte copy
    assert ap.size_warning(g, 1, F16, F16, lambda: asked.append(1) or 8) is None and asked == [1]
    assert ap.size_warning(g, 1, F16, F16, no_lanes) is not None


def test_pointers_matter():
    assert not ap.pointers_matter(O18.rules, O18.target, 16)  # every element size divides 16 bytes
    assert ap.pointers_matter(O18.rules, O18.target, 12)
    assert ap.pointers_matter(O19.rules, O19.target, 16)  # element counts always hang on the type
    assert not ap.pointers_matter(O19.rules, O19.target, None)


@pytest.mark.parametrize("value, expected", [(16, 8), (4, 2)])
def test_converted_size(value, expected):
    src = front_end_options(RunSettings(mode="check", target="0.1.9", source="0.1.8")).source
    assert ap.converts(src, O19.target) and not ap.converts(O18.target, O18.target)
    assert ap.converted_size(src, O19.target, F16, F16, value, str(value)) == expected


@pytest.mark.parametrize("dst, src, value, why", [
    (F16, F32, 16, "the pointer types float16 and float32 differ in width; 0.1.9 needs both pointers in one type"),
    (F16, F16, None, "the size `n` is not an integer literal"),
    (F16, F16, 3, "3 bytes is not a whole number of float16 elements"),
    (F16, F16, 32, "the copy is 32 bytes, not a cp.async width"),
    (ap.PointerType(None, None, "dt"), F16, 16, "the element size of `dt` is not known from the text"),
])
def test_not_converted(dst, src, value, why):
    source = front_end_options(RunSettings(mode="check", target="0.1.9", source="0.1.8")).source
    with pytest.raises(ap.NotConverted, match="^" + __import__("re").escape(why) + "$"):
        ap.converted_size(source, O19.target, dst, src, value, "n")


# ---------------------------------------------------------------- the call dispatch (decide/dispatch.py)

from cpasync_migrate.python.decide import dispatch as dp  # noqa: E402


def test_decision_modules_import_no_parser_dispatch():
    code = ("import sys\nimport cpasync_migrate.python.decide.dispatch\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'libcst'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("call, migrate_tvm, check, code", [
    (dp.Call("tilelang", "legacy", 6, ()), False, dp.LEGACY, "CPA001"),
    (dp.Call("tilelang", "new", 3, ()), False, dp.ACCESS_PTR, None),
    (dp.Call("tvm", "new", 3, ()), False, dp.ACCESS_PTR, None),
    (dp.Call("tvm", "legacy", 6, ()), False, dp.TVM, "CPA003"),
    (dp.Call("tvm", "legacy", 6, ()), True, dp.LEGACY, "CPA001"),
    (dp.Call("tvm", "legacy", 6, (), walrus_callee=True), True, dp.TVM, "CPA003"),
    (dp.Call("tvm", None, 7, ()), False, dp.NONE, None),
    (dp.Call("tvm", "it uses *args or **kwargs", 1, ()), True, dp.TVM, "CPA003"),
    (dp.Call("tilelang", "it uses *args or **kwargs", 1, ()), False, dp.MANUAL, "CPA002"),
    (dp.Call("tilelang", None, 5, ("predicate",)), False, dp.MANUAL, "CPA002"),
    (dp.Call(None, "legacy", 6, (), unresolved="a route"), False, dp.MANUAL, "CPA002"),
    (dp.Call(None, "new", 3, (), unresolved="a route"), False, dp.NONE, None),
    (dp.Call(None, "legacy", 6, ()), False, dp.NONE, None),
])
def test_route(call, migrate_tvm, check, code):
    r = dp.route(call, migrate_tvm)
    assert (r.check, r.code) == (check, code)
    assert r.switch_callee == (check == dp.LEGACY and call.api == "tvm")


def test_route_messages():
    r = dp.route(dp.Call("tilelang", None, 5, ("predicate", "extra")), False)
    assert r.message == ("ptx_cp_async call with an argument layout the tool cannot read: 5 arguments (3 positional; "
                         "keywords predicate, extra), neither the legacy nor the access-pointer form; if it is a "
                         "fork's own op, suppress it with a `cpasync-migrate: ignore` comment")
    assert dp.route(dp.Call(None, "legacy", 6, (), unresolved="x is rebound"), False).message == (
        "legacy ptx_cp_async cannot be migrated automatically: x is rebound")
    walrus = dp.route(dp.Call("tvm", "legacy", 6, (), walrus_callee=True), True).message
    assert walrus.startswith(dp.TVM_MESSAGE + "; --migrate-tvm does not switch a walrus callee")
    assert dp.route(dp.Call("tvm", "legacy", 6, ()), False).message == dp.TVM_MESSAGE


def test_role_and_migrated():
    assert dp.role(dp.Call("tilelang", "legacy", 6, ()), True) == "caller"
    assert dp.role(dp.Call("tilelang", "new", 3, ()), False) is None  # CPA005 is no legacy site
    assert dp.role(dp.Call("tvm", "legacy", 6, ()), True) is None
    assert dp.role(dp.Call(None, "legacy", 6, (), unresolved="r"), True) == "caller"
    assert dp.marks_migrated(dp.Call("tilelang", "new", 3, ()))
    assert not dp.marks_migrated(dp.Call("tvm", "new", 3, ()))


def test_access_ptr_question():
    src18 = front_end_options(RunSettings(mode="check", target="0.1.9", source="0.1.8")).source
    assert ap.check(True, src18, O19.target) == ap.DTYPE_KEYWORD
    assert ap.check(False, src18, O19.target) == ap.CONVERT
    assert ap.check(False, O19.source, O19.target) == ap.SIZE


# ---------------------------------------------------------------- --check without libcst

# Fixtures whose every site the ast side decides: already migrated, CPA004 / CPA005, TVM's wrapper (CPA003), a call
# with *args and a data pointer that is an expression (CPA002 from their facts alone).
_AST_DECIDED = ["already_migrated", "bulk_and_barrier", "data_pointer_expression", "migrate_tvm_opt_in",
                "new_form_leftover_dtype", "new_form_size_warning", "star_args", "tvm_script_namespace", "tvm_tir_call",
                "tvm_tirx_script", "vectorized_no_widening_018", "vectorized_widening"]


def _check_imports_libcst(tree, *args, env=None):
    """(exit code, whether any process of the run imported libcst, stdout) of ``--check --no-cache`` on ``tree``."""
    import os

    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "cpasync_migrate", "--check", "--no-cache",
                          "-j", "2", *args, str(tree)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **(env or {})))
    imported = any(line.startswith("import time:") and line.rstrip().endswith(("| libcst", " libcst"))
                   for line in run.stderr.splitlines())
    return run.returncode, imported, run.stdout


def test_check_on_files_the_ast_side_decides_never_imports_libcst(tmp_path):
    from conftest import FIXTURES

    for name in _AST_DECIDED:
        (tmp_path / f"{name}.py").write_bytes((FIXTURES / "python" / f"{name}.in.py").read_bytes())
    rc, imported, out = _check_imports_libcst(tmp_path)
    assert rc == 1 and "CPA002" in out and "CPA003" in out and "CPA005" in out
    assert not imported, "a --check whose files the ast side decides imports libcst"
    # the switches off: libcst decides those files, with the same report (JSON: every field of every finding)
    runs = {}
    for off in ({}, {"CPASYNC_MIGRATE_FAST_LEGACY": "0", "CPASYNC_MIGRATE_FAST_NEW_FORM": "0",
                     "CPASYNC_MIGRATE_FAST_READS": "0", "CPASYNC_MIGRATE_FAST_DEFINITIONS": "0"}):
        runs[bool(off)] = _check_imports_libcst(tmp_path, "--format", "json", env=off)
    assert runs[True][0] == runs[False][0] == 1 and runs[True][1] and not runs[False][1]
    assert runs[True][2] == runs[False][2]
    # the same tree with a legacy call that needs a rewrite, whose facts the ast side reads (--check decides it
    # with its fix: fast.DECIDE_FIXES), then with one whose facts it does not (a macro's callers decide its
    # pointers' types): libcst makes that fix (the control)
    (tmp_path / "legacy.py").write_bytes((FIXTURES / "python" / "alias_tl.in.py").read_bytes())
    rc, imported, out = _check_imports_libcst(tmp_path)
    assert rc == 1 and "CPA001" in out and not imported
    rc, imported, out = _check_imports_libcst(tmp_path, env={"CPASYNC_MIGRATE_FAST_FIXES": "0"})
    assert rc == 1 and "CPA001" in out and imported
    (tmp_path / "legacy.py").unlink()
    (tmp_path / "macro.py").write_bytes((FIXTURES / "python" / "macro_callers_decide.in.py").read_bytes())
    rc, imported, out = _check_imports_libcst(tmp_path)
    assert rc == 1 and "CPA001" in out and imported


def test_an_attribute_chain_reaches_the_shadowing_binding_and_a_module_path_the_submodule():
    """``tilelang.language``'s attribute ``tir`` is TVM's ``tvm.tir`` (rules/namespaces.toml [attributes], seen
    with real 0.1.7.post1 and 0.1.8): ``import tilelang.language.tir as X`` and dotted uses follow it, a
    from-import of the module path does not."""
    from cpasync_migrate.python.decide.attributes import requalified, shadowed_module, through
    from cpasync_migrate.rules import load_rules

    shadows = load_rules().attributes
    assert shadows == {"tilelang.language.tir": "tvm.tir"}
    assert through("tilelang", ["language", "tir"], shadows) == "tvm.tir"
    assert through("tilelang", ["language", "tir", "op", "ptx_cp_async"], shadows) == "tvm.tir.op.ptx_cp_async"
    assert through("tilelang.language.tir", ["ptx_cp_async"], shadows) == "tilelang.language.tir.ptx_cp_async"
    assert through("tilelang.language", ["ptx_cp_async"], shadows) == "tilelang.language.ptx_cp_async"
    # libcst's joined names, told which part the import found by its path
    assert requalified("tilelang.language.tir.ptx_cp_async", "tilelang", shadows) == "tvm.tir.ptx_cp_async"
    assert requalified("tilelang.language.tir.ptx_cp_async", "tilelang.language.tir", shadows) == \
        "tilelang.language.tir.ptx_cp_async"
    assert requalified("tilelang.language.tir.ptx_cp_async", "tilelang.language", shadows) == "tvm.tir.ptx_cp_async"
    assert shadowed_module("tvm.tir.ir.ptx_cp_async", shadows) == "tilelang.language.tir"
    assert shadowed_module("tilelang.language.ptx_cp_async", shadows) is None


@pytest.mark.parametrize("spelling, want", [
    ("import tilelang.language.tir as X\nCALL = X.ptx_cp_async", "CPA003"),
    ("import tilelang.language.tir.op as X\nCALL = X.ptx_cp_async", "CPA003"),
    ("from tilelang.language import tir as X\nCALL = X.ptx_cp_async", "CPA003"),
    ("import tilelang\nCALL = tilelang.language.tir.ptx_cp_async", "CPA003"),
    ("CALL = T.tir.ptx_cp_async", "CPA003"),
    ("from tilelang.language.tir import ptx_cp_async as CALL", "CPA001"),
    ("from tilelang.language.tir import op as X\nCALL = X.ptx_cp_async", "CPA001"),
    ("import tilelang.language.tir.ir as X\nCALL = X.ptx_cp_async", "CPA002"),
])
def test_both_passes_read_the_attribute_routes_alike(spelling, want):
    """Each spelling's call, analysed by the stdlib-ast pass and by libcst: the same single code."""
    from cpasync_migrate.python import fast, rewrite
    from cpasync_migrate.engine import RunSettings, front_end_options

    imports, _, bind = spelling.rpartition("\n") if "\n" in spelling else ("", "", spelling)
    head = imports + "\n" if imports else ""
    if bind.startswith("CALL = "):
        callee = bind[len("CALL = "):]
    else:
        head, callee = spelling + "\n", "CALL"
    text = ("import tilelang.language as T\n" + head + "\n\n@T.prim_func\n"
            "def k(A: T.Tensor((128,), \"float16\")):\n    with T.Kernel(1, threads=32) as bx:\n"
            "        S = T.alloc_shared((128,), \"float16\")\n"
            f"        {callee}(\"float16\", S.data, 0, A.data, 0, 16)\n")
    opts = front_end_options(RunSettings(mode="check"))
    slow = [f.code for f in rewrite.analyze(text, "k.py", opts).findings]
    quick, _why = fast.decide(text, "k.py", opts)
    assert slow == [want], text
    if quick is not None:
        assert [f.code for f in quick.findings] == slow, text


# ---------------------------------------------------------------- a legacy fix's numbers and text (decide/legacy.py)

def test_fix_modules_import_no_parser():
    """The decisions of a legacy fix, the ast side's facts and edit text, and the layout renderer load no libcst."""
    code = ("import sys\nimport cpasync_migrate.python.decide.legacy, cpasync_migrate.python.fast_legacy, "
            "cpasync_migrate.python.fast_edit, cpasync_migrate.python.layout_render\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'libcst'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_legacy_extent_and_element_count():
    from cpasync_migrate.python.decide import legacy as lg

    assert lg.extent(16, 2, "float16") == "8"
    assert lg.extent(16, 1, "uint8") == "16"
    with pytest.raises(lg.NotMigrated, match="^3 bytes is not a whole number of float16 elements$"):
        lg.extent(3, 2, "float16")
    g = O19.target
    assert lg.element_count(g, 16, 2, "float16") == 8
    assert lg.element_count(g, 4, 4, "float32") == 1
    with pytest.raises(lg.NotMigrated, match=r"^12 bytes is not a cp.async width \(4/8/16\)$"):
        lg.element_count(g, 12, 2, "float16")
    with pytest.raises(lg.NotMigrated, match="^6 bytes is not a whole number of float32 elements$"):
        lg.element_count(g, 6, 4, "float32")


def test_legacy_access_pointer_text():
    from cpasync_migrate.python.decide import legacy as lg

    assert lg.access_ptr_before("TL", O18.target, "'float16'") == "TL.tvm_access_ptr(TL.type_annotation('float16'), "
    assert lg.access_ptr_after("8", O18.target.dst_rw_mask) == ", 8, 2)"
    assert lg.access_ptr_after("8", O18.target.src_rw_mask) == ", 8, 1)"


def test_merge_point_edits():
    from cpasync_migrate.findings import Edit
    from cpasync_migrate.python.decide import legacy as lg

    got = lg.merge_point_edits([Edit(5, 5, "b"), Edit(2, 5, "a"), Edit(5, 7, "c"), Edit(9, 9, "d")])
    assert got == [Edit(2, 5, "ab"), Edit(5, 7, "c"), Edit(9, 9, "d")]
