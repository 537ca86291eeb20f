"""The Python front end decides what the text decides (issue 25): chained assignments, macros called from
macros, merging decided by counting allocations, star imports, module-level macros and their importers,
conflicting declarations, and files left half-migrated."""
from __future__ import annotations

import json
import re
import subprocess
import textwrap

import pytest
from conftest import run_inproc

from cpasync_migrate import python as pyfe
from cpasync_migrate.engine import RunSettings, front_end_options
from cpasync_migrate.python import rewrite

O18 = front_end_options(RunSettings(mode="check", target="0.1.8"))
O19 = front_end_options(RunSettings(mode="check", target="0.1.9"))


def findings(text: str, opts=O18):
    return rewrite.analyze(src(text), "k.py", opts).findings


def one(text: str, opts=O18):
    fs = [f for f in findings(text, opts) if f.code in ("CPA001", "CPA002")]
    assert len(fs) == 1, [(f.code, f.message) for f in fs]
    return fs[0]


def replacement(f) -> str:
    """The fix's new text on one line (the layout aside)."""
    t = re.sub(r"\s+", " ", "".join(e.replacement for e in f.fix.edits))
    return t.replace("( ", "(").replace(", )", ")").replace(" )", ")")


HEAD = "import tilelang.language as T\n\n\n"


def src(text: str) -> str:
    """``text`` with its body dedented after the import line."""
    if text.startswith(HEAD):
        return HEAD + textwrap.dedent(text[len(HEAD):])
    return textwrap.dedent(text)

# ---------------------------------------------------------------- 1. chained assignment

CHAIN = HEAD + '''\
    @T.prim_func
    def k(A: T.Tensor((1024,), "float16")):
        with T.Kernel(8, threads=16) as bx:
            raw = T.alloc_shared((256,), "uint8")
            {bind}
            tx = T.get_thread_binding()
            T.ptx_cp_async("float16", stage.data, tx * 16, A.data, bx * 128 + tx * 8, 16)
    '''


@pytest.mark.parametrize("bind", ["stage = tile = raw", "tile = stage = raw", "stage = raw"])
def test_a_chained_alias_is_followed_like_separate_lines(bind):
    f = one(CHAIN.replace("{bind}", bind))
    assert f.code == "CPA001" and f.fix.applicability.value == "safe", f.message
    assert 'T.type_annotation("uint8"), stage.data, tx * 16, 16, 2' in replacement(f)


def test_a_chain_through_the_same_name_is_not_followed():
    # `raw = stage = raw`: `raw` is bound twice in the kernel, so no single declaration reaches the call
    f = one(CHAIN.replace("{bind}", "raw = stage = raw"))
    assert f.code != "CPA001" or f.fix.applicability.value == "unsafe"


def test_a_chained_allocation_counts_once_and_its_second_name_is_a_use():
    text = HEAD + '''\
        @T.prim_func
        def k(A: T.Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16")):
            with T.Kernel(8, threads=16) as bx:
                x_s = y_s = T.alloc_shared((256,), "uint8")
                other = T.alloc_shared((128,), "float16")
                tx = T.get_thread_binding()
                T.ptx_cp_async("float16", other.data, tx * 8, A.data, tx * 8, 16)
                T.ptx_cp_async("float16", x_s.data, tx * 8, A.data, tx * 8, 16)
                B[tx] = y_s[tx] + other[tx]
        '''
    fs = [f for f in findings(text) if f.line == 11]
    # two used shared.dyn allocations (x_s/y_s once, other): merged, the offset counts the call's float16
    assert fs[0].code == "CPA001", fs[0].message
    assert 'T.type_annotation("float16"), x_s.data' in replacement(fs[0])
    assert "merged shared memory" in fs[0].message


def test_a_chained_module_constant_dtype_is_known():
    text = HEAD + '''\
        DT = ACC = "uint8"


        @T.prim_func
        def k(A: T.Tensor((1024,), "float16")):
            with T.Kernel(8, threads=16) as bx:
                S = T.alloc_shared((256,), DT)
                tx = T.get_thread_binding()
                T.ptx_cp_async("float16", S.data, tx * 16, A.data, tx * 8, 16)
        '''
    f = one(text)
    assert f.code == "CPA001" and "T.type_annotation(DT), S.data, tx * 16, 16, 2" in replacement(f), f.message


NEW_FORM_CHAIN = HEAD + '''\
    @T.prim_func
    def k(A: T.Tensor((1024,), "float16")):
        with T.Kernel(8, threads=16) as bx:
            raw = T.alloc_shared((256,), {dt})
            stage = tile = raw
            T.ptx_cp_async(T.access_ptr(stage[0], "w", 16), T.access_ptr(A[0], "r", 8), 8)
    '''


@pytest.mark.parametrize("opts", [O18, O19], ids=["0.1.8", "0.1.9"])
@pytest.mark.parametrize("dt", ['"uint8"', "DT", "ACC"])
def test_both_passes_agree_on_a_chain(dt, opts):
    text = src(NEW_FORM_CHAIN.replace("{dt}", dt))
    if dt != '"uint8"':
        text = text.replace("@T.prim_func", 'DT = ACC = "uint8"\n\n\n@T.prim_func')
    fast = pyfe.analyze(text, "x.py", opts)
    full = pyfe.analyze(text, "x.py", opts, fast=False)
    assert [(f.line, f.code, f.message) for f in fast.findings] == [(f.line, f.code, f.message) for f in full.findings]
    if opts is O19:
        assert [f.code for f in full.findings] == ["CPA005"]  # uint8 against float16: the chain was followed


# ---------------------------------------------------------------- 2. a macro called from a macro

MACROS = HEAD + '''\
    @T.macro
    def _copy(dst, src, dst_off, src_off):
        T.ptx_cp_async("float16", dst.data, dst_off, src.data, src_off, 16)


    @T.macro
    def _stage(g, s, tx):
        {inner}


    @T.prim_func
    def k(A: T.Tensor((1024,), "float16")):
        with T.Kernel(8, threads=16) as bx:
            raw = T.alloc_shared((256,), {dt})
            tx = T.get_thread_binding()
            _stage(A, raw, tx)
    '''


@pytest.mark.parametrize("inner", ["_copy(s, g, tx * 16, tx * 8)",
                                   "_copy(src_off=tx * 8, src=g, dst_off=tx * 16, dst=s)",
                                   "_copy(s, src=g, src_off=tx * 8, dst_off=tx * 16)"])
def test_a_macro_called_from_a_macro_is_typed_by_the_kernel(inner):
    f = one(MACROS.replace("{inner}", inner).replace("{dt}", '"uint8"'))
    assert f.code == "CPA001", f.message
    assert f.fix.applicability.value == "safe"
    assert 'T.type_annotation("uint8"), dst.data, dst_off, 16, 2' in replacement(f)
    assert 'T.type_annotation("float16"), src.data, src_off, 8, 1' in replacement(f)


def test_a_pointer_parameter_passed_on_is_followed():
    text = HEAD + '''\
        @T.macro
        def _copy(dp, sp, dst_off, src_off):
            T.ptx_cp_async("float16", dp, dst_off, sp, src_off, 16)


        @T.macro
        def _stage(dp, g, tx):
            _copy(dp, g.data, tx * 16, tx * 8)


        @T.prim_func
        def k(A: T.Tensor((1024,), "float16")):
            with T.Kernel(8, threads=16) as bx:
                raw = T.alloc_shared((256,), "uint8")
                tx = T.get_thread_binding()
                _stage(raw.data, A, tx)
        '''
    f = one(text)
    assert f.code == "CPA001" and 'T.type_annotation("uint8"), dp, dst_off, 16, 2' in replacement(f), f.message


def test_a_chain_whose_kernels_disagree_is_left_with_both():
    text = src(MACROS.replace("{inner}", "_copy(s, g, tx * 16, tx * 8)").replace("{dt}", '"uint8"')) + textwrap.dedent('''\


        @T.prim_func
        def k2(A: T.Tensor((1024,), "float16")):
            with T.Kernel(8, threads=16) as bx:
                half = T.alloc_shared((128,), "float16")
                tx = T.get_thread_binding()
                _stage(A, half, tx)
        ''')
    f = one(text)
    assert f.code == "CPA002"
    assert "`raw` (uint8" in f.message and "`half` (float16" in f.message


def test_a_public_macro_chain_states_the_importers_assumption():
    text = MACROS.replace("{inner}", "_copy(s, g, tx * 16, tx * 8)").replace("{dt}", '"uint8"')
    text = text.replace("_stage", "stage")
    f = one(text)
    assert f.code == "CPA001" and f.fix.applicability.value == "unsafe"
    assert any("macro `stage`" in a for a in f.fix.assumptions), f.fix.assumptions


# ---------------------------------------------------------------- 3. merging decided by counting

COUNT = HEAD + '''\
    def make(dtype="float16", flag=True):
        @T.prim_func
        def k(A: T.Tensor((1024,), dtype)):
            with T.Kernel(8, threads=16) as bx:
                S = T.alloc_shared((128,), dtype)
                {more}
                tx = T.get_thread_binding()
                T.ptx_cp_async("uint8", S.data, tx * 8, A.data, tx * 8, 16)

        return k
    '''


def test_one_allocation_never_merges_whatever_its_dtype():
    f = one(COUNT.replace("{more}", "pass"))
    assert f.code == "CPA001" and f.fix.applicability.value == "safe", f.message
    assert "T.type_annotation(dtype), S.data, tx * 8" in replacement(f)


def test_a_static_shared_tile_does_not_count():
    f = one(COUNT.replace("{more}", 'R = T.alloc_shared((128,), "float16", "shared")\n                R[0] = A[0]'))
    # shared.dyn: at most one; static: two, unmerged unless tir.merge_static_smem is set (an assumption)
    assert f.code == "CPA001" and f.fix.applicability.value == "unsafe", f.message
    assert any("merge_static_smem" in a for a in f.fix.assumptions)


def test_a_second_dynamic_tile_keeps_it_undecided():
    f = one(COUNT.replace("{more}", 'R = T.alloc_shared((128,), "float16")\n                R[0] = A[0]'))
    assert f.code == "CPA002" and "not a literal" in f.message


def test_an_allocation_under_an_if_alone_is_still_one():
    text = HEAD + '''\
        def make(flag=True):
            @T.prim_func
            def k(A: T.Tensor((1024,), "float16")):
                with T.Kernel(8, threads=16) as bx:
                    if flag:
                        S = T.alloc_shared((256,), "uint8")
                        T.ptx_cp_async("float16", S.data, bx * 16, A.data, bx * 8, 16)

            return k
        '''
    f = one(text)
    assert f.code == "CPA001" and 'T.type_annotation("uint8"), S.data, bx * 16, 16, 2' in replacement(f), f.message


def test_a_workspace_still_leaves_it_undecided():
    text = HEAD + '''\
        @T.prim_func
        def k(A: T.Tensor((1024,), "float16"), B: T.Tensor((16,), "float32")):
            with T.Kernel(8, threads=128) as bx:
                S = T.alloc_shared((256,), "uint8")
                F = T.alloc_fragment((16,), "float32")
                T.reduce_sum(F, F, dim=0)
                T.ptx_cp_async("float16", S.data, bx * 16, A.data, bx * 8, 16)
        '''
    assert one(text).code == "CPA002"


# ---------------------------------------------------------------- 6. two conflicting declarations

TWO = HEAD + '''\
    def make(raw=True):
        @T.prim_func
        def k(A: T.Tensor((1024,), "float16")):
            with T.Kernel(8, threads=16) as bx:
                if raw:
                    S = T.alloc_shared((256,), "uint8")
                else:
                    S = T.alloc_shared((128,), {other})
                tx = T.get_thread_binding()
                T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)

        return k
    '''


def test_two_conflicting_declarations_name_both_and_offer_no_fix():
    f = one(TWO.replace("{other}", '"float16"'))
    assert f.code == "CPA002" and f.fix is None
    assert "2 declarations of `S` reach the call" in f.message
    assert "uint8" in f.message and "float16" in f.message
    assert "line 9" in f.message and "line 11" in f.message


def test_agreeing_declarations_are_read_as_one_type():
    # both uint8 and the call float16: the merge question is asked of them (two allocation statements under an
    # `if`: undecided), where the fix once fell back to the call's float16 (wrong for both branches, unmerged)
    f = one(TWO.replace("{other}", '"uint8"'))
    assert f.code == "CPA002" and "`S`'s own type uint8 if not" in f.message, f.message
    # both float16, as the call: the text decides the pointer type, and the fix is safe
    g = one(TWO.replace("{other}", '"float16"').replace('"uint8"', '"float16"'))
    assert g.code == "CPA001" and g.fix.safe, g.message
    assert 'T.type_annotation("float16"), S.data, tx * 8, 8, 2)' in replacement(g)


NESTED = HEAD + '''\
    def make(kind="bytes", signed=False):
        @T.prim_func
        def k(A: T.Tensor((1024,), "float16")):
            with T.Kernel(8, threads=16) as bx:
                if kind == "bytes":
                    if signed:
                        S = T.alloc_shared((256,), {a})
                    else:
                        S = T.alloc_shared((256,), {b})
                else:
                    S = T.alloc_shared((128,), "float16")
                tx = T.get_thread_binding()
                T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)

        return k
    '''


def test_declarations_through_nested_ifs_are_named_in_the_files_order():
    f = one(NESTED.replace("{a}", '"int8"').replace("{b}", '"uint8"'))
    assert f.code == "CPA002" and f.fix is None and "3 declarations of `S` reach the call" in f.message
    lines = [f.message.index(f"line {n}:") for n in (10, 12, 14)]
    assert lines == sorted(lines), f.message
    assert "int8;" in f.message and "uint8;" in f.message and "float16)" in f.message
    g = one(NESTED.replace("{a}", '"float16"').replace("{b}", "T.float16"))
    assert g.code == "CPA001" and g.fix.safe, g.message


def test_conflicting_declarations_passed_to_a_macro():
    text = HEAD + '''\
        @T.macro
        def _copy(dst, src, tx):
            T.ptx_cp_async("float16", dst.data, tx * 8, src.data, tx * 8, 16)


        def make(raw=True):
            @T.prim_func
            def k(A: T.Tensor((1024,), "float16")):
                with T.Kernel(8, threads=16) as bx:
                    if raw:
                        S = T.alloc_shared((256,), "uint8")
                    else:
                        S = T.alloc_shared((128,), "float16")
                    _copy(S, A, T.get_thread_binding())

            return k
        '''
    f = one(text)
    assert f.code == "CPA002" and "2 declarations of it reach the call" in f.message, f.message


# ---------------------------------------------------------------- 4. star import

STAR = '''\
from tilelang.language import *
{more}

@prim_func
def k(A: Tensor((1024,), "float16")):
    with Kernel(8, threads=16) as bx:
        raw = alloc_shared((256,), "uint8")
        half = alloc_shared((128,), {dt})
        tx = get_thread_binding()
        ptx_cp_async("float16", raw.data, tx * 8, A.data, tx * 8, 16)
        half[tx] = A[tx]
'''


@pytest.mark.parametrize("dt", ['"float16"', "float16"])
def test_star_import_names_are_the_modules_own(dt):
    f = one(STAR.replace("{more}", "").replace("{dt}", dt))
    # a bare @prim_func is a kernel and both bare alloc_shared calls count: merged, P the call's float16
    assert f.code == "CPA001" and f.fix.applicability.value == "safe", f.message
    assert "merged shared memory" in f.message
    assert 'T.type_annotation("float16"), raw.data, tx * 8, 8, 2' in replacement(f)


def test_a_second_star_import_leaves_bare_names_unresolved():
    f = one(STAR.replace("{more}", "from helpers import *").replace("{dt}", '"float16"'))
    assert f.code == "CPA002" and "neither a prim_func nor a T.macro" in f.message, f.message


def test_a_name_the_file_binds_is_not_the_star_modules():
    text = STAR.replace("{more}", "\ndef alloc_shared(shape, dtype):\n    return None\n").replace("{dt}", '"float16"')
    f = one(text)
    assert f.code != "CPA001" or "merged" not in f.message


# ---------------------------------------------------------------- 5. module-level macros and their importers

STAGE = '''\
import tilelang.language as T

{all}

@T.macro
def {name}(dst, src, base, tx):
    T.ptx_cp_async("float16", dst.data, tx * 16, src.data, base + tx * 8, 16)


@T.prim_func
def first(A: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        raw = T.alloc_shared((256,), "uint8")
        {name}(raw, A, bx * 128, T.get_thread_binding())


@T.prim_func
def second(A: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        tile = T.alloc_shared((256,), "uint8")
        {name}(tile, A, bx * 128, T.get_thread_binding())
'''


def _git(root, *args):
    subprocess.run(["git", "-c", "core.fsmonitor=false", *args], cwd=root, check=True, capture_output=True)


def _repo(tmp_path, name="stage", all_="", git=True):
    root = tmp_path / "repo"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "__init__.py").write_text("")
    (root / "kernels" / "stage.py").write_text(STAGE.replace("{name}", name).replace("{all}", all_))
    if git:
        _git(root, "init", "-q", ".")
    return root


def _check(root, *extra, cache=None):
    args = ["--check", "--format", "json", "--target", "0.1.8"]
    args += ["--cache-dir", str(cache)] if cache else ["--no-cache"]
    r = run_inproc(*args, *extra, "kernels/stage.py", cwd=root)
    (f,) = [x for x in json.loads(r.stdout)["findings"] if x["code"] in ("CPA001", "CPA002")]
    return f


def _user(imp="from kernels.stage import stage", call="stage", dtype="uint8", more="", body=""):
    """An importing file: a kernel that calls the macro with a ``dtype`` tile (``more``: further lines of its
    body, ``body``: text between the import and the kernel)."""
    return (f"import tilelang.language as T\n{imp}\n{body}\n\n@T.prim_func\n"
            'def third(A: T.Tensor((1024,), "float16")):\n'
            "    with T.Kernel(8, threads=16) as bx:\n"
            f'        buf = T.alloc_shared((256,), "{dtype}")\n{more}'
            f"        {call}(buf, A, bx * 128, T.get_thread_binding())\n")


def test_no_importer_in_the_work_tree_makes_the_fix_safe(tmp_path):
    root = _repo(tmp_path)
    (root / "other.py").write_text("stage = 3  # names it, imports nothing\n")
    f = _check(root)
    assert f["fix"]["applicability"] == "safe" and f["status"] == "fixable", f  # --check: would be rewritten
    assert "no other file in the git work tree" in f["message"] and "`stage`" in f["message"]


def test_agreeing_importer_calls_make_the_fix_safe_and_are_named(tmp_path):
    root = _repo(tmp_path)
    (root / "tools").mkdir()
    (root / "tools" / "bench.py").write_text(_user())
    f = _check(root)
    assert f["code"] == "CPA001" and f["fix"]["applicability"] == "safe" and f["status"] == "fixable", f
    m = f["message"]
    assert "(`tools/bench.py`) call it at `tools/bench.py:9`" in m, m
    assert "uint8 for `dst`" in m and "float16 for `src`" in m and "do not merge shared.dyn" in m, m


def test_an_importer_that_never_calls_it_is_named_as_the_ground(tmp_path):
    root = _repo(tmp_path)
    (root / "tools").mkdir()
    (root / "tools" / "bench.py").write_text("from kernels.stage import stage\n")
    f = _check(root)
    assert f["fix"]["applicability"] == "safe" and "(`tools/bench.py`) never call it" in f["message"], f


def test_a_disagreeing_importer_call_takes_the_fix_away_and_names_both_readings(tmp_path):
    root = _repo(tmp_path)
    (root / "tools").mkdir()
    (root / "tools" / "bench.py").write_text(_user(dtype="float16"))
    f = _check(root)
    assert f["code"] == "CPA002" and f["fix"] is None and f["status"] == "manual", f
    assert "`tools/bench.py:9` passes float16 for `dst` where this file's calls pass uint8" in f["message"], f
    run_inproc("--no-cache", "--unsafe-fixes", "--target", "0.1.8", "kernels/stage.py", cwd=root)  # writes nothing
    assert (root / "kernels" / "stage.py").read_text() == STAGE.replace("{name}", "stage").replace("{all}", "")


def test_an_importing_kernel_that_merges_is_a_disagreement(tmp_path):
    root = _repo(tmp_path)
    (root / "tools").mkdir()
    more = '        acc = T.alloc_shared((64,), "float32")\n        T.clear(acc)\n'
    (root / "tools" / "bench.py").write_text(_user(more=more))
    f = _check(root)
    assert f["code"] == "CPA002", f
    assert "the call at `tools/bench.py:11`" in f["message"] and "2 shared.dyn allocations" in f["message"], f
    assert "where this file's kernels do not merge" in f["message"]


@pytest.mark.parametrize("text, why", [
    (_user(call="stage", more="        args = (buf, A, 0, 0)\n").replace("stage(buf, A, bx * 128, T.get_thread_binding())",
                                                                    "stage(*args)"), "*args"),
    (_user(body="st = stage\n", call="st"), "other than by a call at line 3"),
    (_user(body="\n\ndef run(f):\n    return f\n\n\nrun(stage)\n", call="stage"), "other than by a call"),
    (_user(more="        helper(buf)\n", body="from tools.h import helper\n"), "which may allocate"),
    (_user(body="if T:\n    def stage(*a):\n        pass\n"), "binds `stage` more than once"),
])
def test_an_importer_whose_calls_cannot_be_read_keeps_the_assumption_and_says_why(tmp_path, text, why):
    root = _repo(tmp_path)
    (root / "tools").mkdir()
    (root / "tools" / "bench.py").write_text(text)
    f = _check(root)
    assert f["code"] == "CPA001" and f["fix"]["applicability"] == "unsafe", f
    kept = [a for a in f["fix"]["assumptions"] if "`tools/bench.py`" in a]
    assert kept and any(why in a for a in kept), f["fix"]["assumptions"]


def test_an_importer_over_the_size_limit_is_not_read(tmp_path):
    from cpasync_migrate import importers

    root = _repo(tmp_path)
    (root / "big.py").write_text("from kernels.stage import stage\n" + "#" * (importers._MAX_BYTES + 10) + "\n")
    f = _check(root)
    assert f["fix"]["applicability"] == "unsafe"
    assert any("`big.py` is over the size limit" in a for a in f["fix"]["assumptions"]), f["fix"]["assumptions"]


@pytest.mark.parametrize("imp, call", [("from .stage import stage", "stage"), ("from . import stage as st", "st.stage"),
                                       ("import kernels.stage", "kernels.stage.stage"),
                                       ("from kernels.stage import *", "stage"),
                                       ("from kernels import stage as mod", "mod.stage"),
                                       ("from kernels.stage import stage as go", "go")])
def test_importer_spellings_are_read(tmp_path, imp, call):
    root = _repo(tmp_path)
    (root / "kernels" / "user.py").write_text(_user(imp=imp, call=call, dtype="float16"))
    f = _check(root)
    assert f["code"] == "CPA002" and "`kernels/user.py:9` passes float16" in f["message"], f


def test_a_runtime_import_is_not_read(tmp_path):
    root = _repo(tmp_path)
    (root / "kernels" / "user.py").write_text("import importlib\nm = importlib.import_module('kernels' + '.stage')\n"
                                               "m.stage\n")
    f = _check(root)
    assert f["fix"]["applicability"] == "unsafe" and any("at run time" in a for a in f["fix"]["assumptions"]), f


def test_a_file_importing_it_from_an_importer_counts_too(tmp_path):
    root = _repo(tmp_path)
    (root / "kernels" / "api.py").write_text("from kernels.stage import stage\n")
    (root / "tools").mkdir()
    (root / "tools" / "bench.py").write_text(_user(imp="from kernels.api import stage", dtype="float16"))
    f = _check(root)
    assert f["code"] == "CPA002" and "`tools/bench.py:9` passes float16" in f["message"], f


def test_an_untracked_file_counts_and_a_star_import_of_an_unexported_name_does_not(tmp_path):
    root = _repo(tmp_path, all_='__all__ = ["first", "second"]\n')
    (root / "user.py").write_text(_user(imp="from kernels.stage import *", dtype="float16"))
    assert _check(root)["fix"]["applicability"] == "safe"
    (root / "user2.py").write_text(_user(dtype="float16"))
    assert _check(root)["code"] == "CPA002"


def test_outside_any_repository_it_stays_unsafe(tmp_path):
    root = _repo(tmp_path, git=False)
    f = _check(root)
    assert f["fix"]["applicability"] == "unsafe"
    assert not any("work tree" in a for a in f["fix"]["assumptions"])


def test_a_project_folder_answers_outside_git(tmp_path):
    root = _repo(tmp_path, git=False)
    (root / "pyproject.toml").write_text("[project]\nname = 'k'\n")
    f = _check(root)
    assert f["fix"]["applicability"] == "safe" and "project folder" in f["message"]
    (root / "use.py").write_text(_user(dtype="float16"))
    assert _check(root)["code"] == "CPA002"


def test_a_cached_analysis_is_not_served_stale(tmp_path):
    root = _repo(tmp_path)
    cache = tmp_path / "cache"
    assert _check(root, cache=cache)["fix"]["applicability"] == "safe"
    (root / "use.py").write_text(_user(dtype="float16"))
    again = run_inproc("--check", "--format", "json", "--cache-dir", str(cache), "kernels/stage.py", cwd=root)
    (f,) = [x for x in json.loads(again.stdout)["findings"] if x["code"] in ("CPA001", "CPA002")]
    assert f["code"] == "CPA002"  # the file's bytes are the same; the repository is not
    (root / "use.py").write_text(_user(dtype="uint8"))
    assert _check(root, cache=cache)["fix"]["applicability"] == "safe"  # and the agreeing importer is read afresh
    assert any(p.suffix == ".json" for p in cache.rglob("*"))


@pytest.mark.parametrize("all_, public", [("", False), ('__all__ = ["_stage"]\n', True)])
def test_a_private_macro_is_the_modules_own_unless_exported(tmp_path, all_, public):
    root = _repo(tmp_path, name="_stage", all_=all_, git=False)
    f = _check(root)
    assert f["fix"]["applicability"] == ("unsafe" if public else "safe"), f


# ---------------------------------------------------------------- 7. a file left half-migrated

HALF = HEAD + '''\
@T.prim_func
def k(A: T.Tensor((1024,), "float16"), C: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        S = T.alloc_shared((128,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)
        T.ptx_cp_async("float16", S.access_ptr("w"), 0, C.data, tx * 8, 16)


@T.prim_func
def whole(A: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        R = T.alloc_shared((128,), "float16")
        T.ptx_cp_async("float16", R.data, 0, A.data, 0, 16)
'''


def test_a_half_migrated_file_is_named_in_the_summary_and_in_check_after_the_write(tmp_path):
    f = tmp_path / "k.py"
    f.write_text(HALF)
    check = run_inproc("--check", "--no-cache", "k.py", cwd=tmp_path)
    assert "k.py: would be, once written, half-migrated" in check.stdout + check.stderr
    write = run_inproc("--no-cache", "k.py", cwd=tmp_path)
    assert write.returncode == 1
    line = next(x for x in (write.stdout + write.stderr).splitlines() if "half-migrated" in x)
    assert line.startswith("k.py: is now half-migrated, which no TileLang release loads")
    assert "access pointers in `k`, `whole`" in line and "legacy calls remain in `k` (line 14 CPA002 manual)" in line
    after = run_inproc("--check", "--no-cache", "k.py", cwd=tmp_path)
    text = after.stdout + after.stderr
    assert "k.py: is half-migrated" in text and "legacy calls remain in `k` (line 14 CPA002 manual)" in text, text


def test_a_fully_migrated_or_untouched_file_is_not_half_migrated(tmp_path):
    whole = HALF.split("\n\n\n@T.prim_func\ndef whole")[0].replace('S.access_ptr("w"), 0', "S.data, tx * 8")
    f = tmp_path / "k.py"
    f.write_text(whole)
    r = run_inproc("--no-cache", "k.py", cwd=tmp_path)
    assert r.returncode == 0 and "half-migrated" not in r.stdout + r.stderr
    g = tmp_path / "g.py"
    g.write_text(HALF.split("\n\n\n@T.prim_func\ndef whole")[0])
    g.write_text(g.read_text().replace('        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)\n', ""))
    r = run_inproc("--check", "--no-cache", "g.py", cwd=tmp_path)
    out = r.stdout + r.stderr
    assert "CPA002" in out and "half-migrated" not in out  # nothing migrated: it still loads under 0.1.7.post1


def test_half_migration_survives_the_results_cache(tmp_path):
    f = tmp_path / "k.py"
    f.write_text(HALF)
    run_inproc("--cache-dir", str(tmp_path / "c"), "k.py", cwd=tmp_path)
    for _ in range(2):  # the second --check reads the analysis from the cache
        r = run_inproc("--check", "--cache-dir", str(tmp_path / "c"), "k.py", cwd=tmp_path)
        out = r.stdout + r.stderr
        assert "k.py: is half-migrated" in out, out


@pytest.mark.parametrize("fast", [True, False])
def test_tilelangs_op_in_neither_form_is_left_for_a_person_by_both_passes(fast):
    text = 'import tilelang.language as T\nT.ptx_cp_async("float16", S.data, 8, C.data, 8, 16, 1)\n'
    assert [f.code for f in pyfe.analyze(text, "x.py", O18, fast=fast).findings] == ["CPA002"]
