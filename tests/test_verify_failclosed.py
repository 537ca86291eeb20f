"""The verifier fails closed: what the kernel builder does not model makes the kernel inconclusive, naming it.

Argument binding (verify/build/signatures.py): every API call the builder reads is bound to the real
signature; an unknown keyword, an extra positional, ``*args``/``**kw`` or a parameter the builder does not
read, given a value other than its neutral one, is refused by name.
"""
from __future__ import annotations

import ast

import pytest

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify import verify_source
from cpasync_migrate.verify.build import build_kernels
from cpasync_migrate.verify.build.signatures import SIGNATURES, bind, cp_async_signature
from cpasync_migrate.verify.ir import Unsupported

RULES = load_rules()

KERNEL = '''
import tilelang.language as T


@T.prim_func
def main(A: T.Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        tx = T.get_thread_binding()
        S = T.alloc_shared((128,), "float16")
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = T.if_then_else(tx < 16, S[tx * 8 + i], T.Cast("float16", 0))
'''


def refusals(text: str, meaning: str = "bytes") -> list:
    """Every construct the builder refused in the text's kernels (a kernel error or an opaque statement)."""
    out = []
    for b in build_kernels(text, RULES, meaning=meaning):
        if b.error is not None:
            out.append(b.error.construct)
        else:
            out.extend(o.construct for o in b.kernel.unsupported)
    return out


def call_of(src: str) -> ast.Call:
    return ast.parse(src, mode="eval").body


def const_value(node):
    try:
        return True, ast.literal_eval(node)
    except ValueError:
        return False, None


# ---------------------------------------------------------------- the binder itself
def test_bind_positional_and_keyword():
    b = bind(SIGNATURES["alloc_shared"], call_of('T.alloc_shared((64,), "float16", "shared")'), const_value)
    assert ast.literal_eval(b["scope"]) == "shared"
    b = bind(SIGNATURES["alloc_shared"], call_of('T.alloc_shared((64,), dtype="float16", scope="shared")'),
             const_value)
    assert ast.literal_eval(b["dtype"]) == "float16" and ast.literal_eval(b["scope"]) == "shared"


def test_alloc_buffer_third_positional_is_data_not_scope():
    b = bind(SIGNATURES["alloc_buffer"], call_of('T.alloc_buffer((64,), "float16", "shared")'), const_value)
    assert "scope" not in b and ast.literal_eval(b["data"]) == "shared"


@pytest.mark.parametrize("src, named", [
    ('T.alloc_shared((64,), "float16", align=16)', "'align'"),
    ('T.alloc_shared((64,), "float16", "shared", 4)', "4 positional"),
    ('T.alloc_shared(*dims)', "*dims"),
    ('T.alloc_shared((64,), **kw)', "**kw"),
    ('T.alloc_shared((64,), "float16", dtype="float16")', "'dtype' twice"),
    ('T.alloc_shared((64,))', "'dtype'"),
    ('T.match_buffer(a, (64,), "float16", elem_offset=8)', "elem_offset"),
    ('T.match_buffer(a, (64,), "float16", None, None, 8)', "6th positional argument 'elem_offset'"),
    ('T.match_buffer(a, (64,), "float16", offset_factor=16)', "offset_factor"),
    ('T.match_buffer(a, (64,), "float16", strides=(2,))', "strides"),
    ('T.match_buffer(a, (64,), "float16", scope="shared")', "scope"),
    ('T.match_buffer(a, (64,), "float16", axis_separators=[1])', "axis_separators"),
    ('T.match_buffer(a, (64,), "float16", buffer_type="auto_broadcast")', "buffer_type"),
    ('T.match_buffer(a, (64,), "float16", align=64)', "align"),
])
def test_bind_refuses_by_name(src, named):
    fn = call_of(src).func.attr
    with pytest.raises(Unsupported) as e:
        bind(SIGNATURES[fn], call_of(src), const_value)
    assert named in e.value.construct, e.value.construct


def test_bind_accepts_neutral_values():
    b = bind(SIGNATURES["match_buffer"], call_of(
        'T.match_buffer(a, (64,), "float16", elem_offset=0, offset_factor=0, scope="global", strides=None)'),
        const_value)
    assert set(b.args) >= {"param", "shape", "dtype"}


def test_cp_async_signatures_come_from_the_rules():
    legacy = cp_async_signature(RULES, "legacy", "bytes")
    assert legacy.params[:6] == tuple(RULES.legacy.python_params)
    for g in RULES.generations[1:]:
        s = cp_async_signature(RULES, "access_ptr", g.size_meaning)
        assert s.params == tuple([p for p in s.params]) and s.params[2] in g.python_params
    with pytest.raises(Unsupported, match="'bytes'"):
        bind(cp_async_signature(RULES, "access_ptr", "num_elems"), call_of("T.ptx_cp_async(d, s, bytes=16)"))


# ---------------------------------------------------------------- every reader goes through it
APIS = ["alloc_shared", "alloc_buffer", "decl_buffer", "alloc_fragment", "alloc_local", "match_buffer", "Tensor",
        "Buffer", "Kernel", "tvm_access_ptr", "access_ptr", "Buffer.access_ptr", "serial", "Parallel", "unroll",
        "vectorized", "Pipelined", "thread_binding", "if_then_else", "Cast", "cast", "ptx_wait_group",
        "get_thread_binding", "copy", "fill", "clear"]


def test_every_api_has_a_signature_naming_its_source():
    for api in APIS:
        assert api in SIGNATURES, api
        assert SIGNATURES[api].source, api


# One edit per reader: the kernel text with an argument the API does not take.
BOGUS = [
    ('S = T.alloc_shared((128,), "float16")', 'S = T.alloc_shared((128,), "float16", bogus=1)'),
    ('with T.Kernel(8, threads=16) as bx:', 'with T.Kernel(8, threads=16, bogus=1) as bx:'),
    ('tx = T.get_thread_binding()', 'tx = T.get_thread_binding(0, bogus=1)'),
    ('T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)',
     'T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16, bogus=1)'),
    ('T.ptx_wait_group(0)', 'T.ptx_wait_group(0, bogus=1)'),
    ('T.ptx_commit_group()', 'T.ptx_commit_group(bogus=1)'),
    ('for i in T.serial(8):', 'for i in T.serial(8, bogus=1):'),
    ('S[tx * 8 + i], T.Cast("float16", 0))', 'S[tx * 8 + i], T.Cast("float16", 0), bogus=1)'),
    ('T.Cast("float16", 0)', 'T.Cast("float16", 0, bogus=1)'),
    ('A: T.Tensor((1024,), "float16")', 'A: T.Tensor((1024,), "float16", bogus=1)'),
]


@pytest.mark.parametrize("i", range(len(BOGUS)))
def test_unknown_keyword_makes_the_kernel_inconclusive_naming_it(i):
    a, b = BOGUS[i]
    assert KERNEL.count(a) == 1
    text = KERNEL.replace(a, b)
    assert any("bogus" in r for r in refusals(text)), refusals(text)
    assert not refusals(KERNEL)


def test_access_pointer_readers_refuse_unknown_keywords():
    new = KERNEL.replace(
        'T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)',
        'T.ptx_cp_async(T.access_ptr(S[tx * 8], "w", 8), A.access_ptr(1, offset=bx * 128 + tx * 8, extent=8), 16)')
    assert not refusals(new)
    assert verify_source(KERNEL, new, "k.py", rules=RULES, target="0.1.8", seeds=1)[0].verdict == "equivalent"
    for a, b in [('T.access_ptr(S[tx * 8], "w", 8)', 'T.access_ptr(S[tx * 8], "w", 8, bogus=1)'),
                 ('extent=8)', 'extent=8, bogus=1)'),
                 ('T.access_ptr(S[tx * 8], "w", 8)',
                  'T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2, bogus=1)')]:
        bad = new.replace(a, b)
        assert any("bogus" in r for r in refusals(bad)), (b, refusals(bad))
        v = verify_source(KERNEL, bad, "k.py", rules=RULES, target="0.1.8", seeds=1)[0]
        assert v.verdict == "inconclusive" and "bogus" in v.reason, v.to_dict()


def test_static_scope_positional_is_not_merged():
    text = KERNEL.replace('S = T.alloc_shared((128,), "float16")',
                          'S = T.alloc_shared((128,), "float16", "shared")\n        R = T.alloc_shared((16,), "int32")'
                          '\n        R[tx] = tx')
    k = build_kernels(text, RULES, meaning="bytes")[0].kernel
    assert [(b.dtype, b.scope) for b in k.allocs] == [("float16", "shared"), ("int32", "shared.dyn")]


# ---------------------------------------------------------------- binding time (program order)
def test_module_level_prim_func_reads_names_at_its_def():
    text = "N = 8\n" + KERNEL.replace("tx * 8, A.data", "tx * N, A.data") + "\nN = 16\n"
    b = build_kernels(text, RULES, meaning="bytes")[0]
    assert b.error is None, b.error
    site = b.kernel.sites[0]
    assert "8" in repr(site.dst.offset) and "16" not in repr(site.dst.offset), site.dst.offset


def test_rebinding_under_a_guard_is_named():
    text = "import os\nN = 8\nif os.environ.get('X'):\n    N = 16\n" + KERNEL.replace("tx * 8, A.data",
                                                                                      "tx * N, A.data")
    assert any("'N'" in r for r in refusals(text)), refusals(text)


def test_macro_defined_after_a_module_level_prim_func_is_not_reached():
    macro = ('\n\n@T.macro\ndef load(S, A, bx, tx):\n'
             '    T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)\n')
    call = 'T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)'
    after = KERNEL.replace(call, "load(S, A, bx, tx)") + macro
    before = KERNEL.replace(call, "load(S, A, bx, tx)").replace("\n\n@T.prim_func", macro + "\n\n@T.prim_func")
    assert not refusals(before)
    assert build_kernels(before, RULES, meaning="bytes")[0].kernel.sites
    assert any("load" in r for r in refusals(after)), refusals(after)


def test_factory_reads_the_module_at_its_module_level_call():
    fac = ('import tilelang.language as T\n\nN = 8\n\n\ndef make(M=1024):\n'
           + "\n".join("    " + line if line else line for line in KERNEL.split("\n")[3:]).replace(
               "tx * 8, A.data", "tx * N, A.data") + "\n    return main\n\n\n")
    assert not refusals(fac + "k = make()\n")
    assert not refusals(fac + "N = 16\n")
    named = refusals(fac + "k = make()\nN = 16\n")
    assert any("'N'" in r and "make()" in r for r in named), named


# ---------------------------------------------------------------- the form of each text
def test_a_legacy_call_left_in_the_new_text_is_never_equivalent():
    for target in ("0.1.8", "0.1.9"):
        (v,) = verify_source(KERNEL, KERNEL, "k.py", rules=RULES, target=target, seeds=1)
        assert v.verdict == "mismatch" and "legacy" in v.reason and not v.detail.get("unchanged"), v.to_dict()
    b = build_kernels(KERNEL, RULES, meaning="bytes", forms=("access_ptr",))[0]
    assert "line 10" in b.foreign
    assert not build_kernels(KERNEL, RULES, meaning="bytes")[0].foreign


def test_factory_called_through_another_function_at_module_level():
    fac = ('import tilelang.language as T\n\nN = 8\n\n\ndef make(M=1024):\n'
           + "\n".join("    " + line if line else line for line in KERNEL.split("\n")[3:]).replace(
               "tx * 8, A.data", "tx * N, A.data") + "\n    return main\n\n\ndef build():\n    return make()\n\n\n")
    named = refusals(fac + "k = build()\nN = 16\n")
    assert any("'N'" in r and "build()" in r for r in named), named


# Lowered with real TileLang 0.1.8, a match_buffer's elem_offset (constant, or symbolic through
# offset_factor) is added to loads of A[i] but not to the access pointer of A[i]: the verifier does not
# model it and refuses it by name (neither a proof nor a refutation).
@pytest.mark.parametrize("kw", ["elem_offset=64", "offset_factor=8", "None, None, 32"])
def test_match_buffer_offsets_are_refused_by_name(kw):
    old = KERNEL.replace('def main(A: T.Tensor((1024,), "float16"), ', 'def main(a: T.handle, ').replace(
        "    with T.Kernel", f'    A = T.match_buffer(a, (1024,), "float16", {kw})\n    with T.Kernel', 1)
    new = old.replace('T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)',
                      'T.ptx_cp_async(T.access_ptr(S[tx * 8], "w", 8), T.access_ptr(A[bx * 128 + tx * 8], "r", 8), 16)')
    (v,) = verify_source(old, new, "k.py", rules=RULES, target="0.1.8", seeds=1)
    name = "elem_offset" if "elem" in kw or "32" in kw else "offset_factor"
    assert v.verdict == "inconclusive" and name in v.reason, v.to_dict()
    (v0,) = verify_source(old.replace(kw, "elem_offset=0"), new.replace(kw, "elem_offset=0"), "k.py", rules=RULES,
                          target="0.1.8", seeds=1)
    assert v0.verdict == "equivalent", v0.to_dict()


def test_build_time_calls_bind_their_arguments():
    text = KERNEL.replace("with T.Kernel(8,", "with T.Kernel(T.ceildiv(1024, 128, bogus=1),")
    assert any("bogus" in r for r in refusals(text)), refusals(text)
    assert not refusals(KERNEL.replace("with T.Kernel(8,", "with T.Kernel(T.ceildiv(1024, rhs=128),"))


@pytest.mark.parametrize("deco, named", [("@T.prim_func(generator=True)", "generator"),
                                         ("@T.prim_func(eager_jit=True)", "eager_jit"),
                                         ("@T.prim_func(bogus=1)", "bogus")])
def test_decorator_arguments_are_bound(deco, named):
    text = KERNEL.replace("@T.prim_func", deco)
    assert any(named in r for r in refusals(text)), refusals(text)
    assert not refusals(KERNEL.replace("@T.prim_func", "@T.prim_func(eager_jit=False)"))


def test_macro_decorator_arguments_are_bound():
    macro = ('\n\n@T.macro(hygienic=False)\ndef load(S, A, bx, tx):\n'
             '    T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)\n')
    call = 'T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)'
    text = KERNEL.replace(call, "load(S, A, bx, tx)").replace("\n\n@T.prim_func", macro + "\n\n@T.prim_func")
    assert any("hygienic" in r for r in refusals(text)), refusals(text)
    assert not refusals(text.replace("@T.macro(hygienic=False)", "@T.macro"))


@pytest.mark.parametrize("stmt", ["del N", "print(N := 16)", "globals()['N'] = 16", "exec('N = 16')"])
def test_module_level_rebinding_the_reader_does_not_follow_is_named(stmt):
    fac = ('import tilelang.language as T\n\nN = 8\n\n\ndef make(M=1024):\n'
           + "\n".join("    " + line if line else line for line in KERNEL.split("\n")[3:]).replace(
               "tx * 8, A.data", "tx * N, A.data") + "\n    return main\n\n\n")
    assert not refusals(fac)
    named = refusals(fac + stmt + "\n")
    assert any("'N'" in r for r in named), named


# ---------------------------------------------------------------- what the new text may change around the kernels

NEW_CALL = ('T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2), '
            'T.tvm_access_ptr(T.type_annotation("float16"), A.data, bx * 128 + tx * 8, 8, 1), 16)')
OLD_CALL = 'T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)'
MIGRATED = KERNEL.replace(OLD_CALL, NEW_CALL)


def verdicts(old: str, new: str) -> dict:
    return {v.kernel: (v.verdict, v.reason) for v in verify_source(old, new, "k.py", rules=RULES, target="0.1.8",
                                                                   seeds=1)}


def test_the_correct_migration_is_proven():
    assert verdicts(KERNEL, MIGRATED)["main"][0] == "equivalent"


@pytest.mark.parametrize("patch", [
    "T.type_annotation = lambda dtype: T.type_annotation('float32')",
    "setattr(T, 'tvm_access_ptr', None)",
    "import tilelang.language.tir.op as op\nop.tvm_access_ptr = None",
    "import importlib\nm = importlib.import_module('tilelang.language')\nm.type_annotation = None",
    "getattr(T, 'tir').type_annotation = None",
    "X = [T]\nX[0].alloc_shared = T.alloc_fragment",
])
def test_an_attribute_written_outside_a_function_makes_every_kernel_inconclusive(patch):
    """TileLang looks its API up when the kernel is built: a write to any module or module-level object (not only
    to the intrinsic's own path) may change what the migrated call builds."""
    new = MIGRATED.replace("import tilelang.language as T\n", "import tilelang.language as T\n" + patch + "\n", 1)
    verdict, reason = verdicts(KERNEL, new)["main"]
    assert verdict == "inconclusive" and "written at line" in reason, reason


def test_attribute_writes_to_a_function_s_own_objects_are_not_refused():
    helper = "\n\nclass Box:\n    def __init__(self):\n        self.x = 1\n\n\ndef fill(b):\n    b.y = 2\n"
    assert verdicts(KERNEL + helper, MIGRATED + helper)["main"][0] == "equivalent"


@pytest.mark.parametrize("tail", ["main = other", "main, x = other, 1", "def main():\n    pass",
                                  "from tilelang.language import ptx_cp_async as main"])
def test_a_kernel_name_bound_again_is_inconclusive(tail):
    other = "\n\n@T.prim_func\ndef other(A: T.Tensor((1024,), \"float16\"), B: T.Tensor((1024,), \"float16\")):\n" \
            "    with T.Kernel(8, threads=16) as bx:\n        B[bx] = A[bx]\n"
    v = verdicts(KERNEL, MIGRATED + other + "\n" + tail + "\n")
    assert v["main"][0] == "inconclusive" and "bound again" in v["main"][1], v["main"]
    assert v["other"][0] == "inconclusive" and "adds the prim_func" in v["other"][1], v["other"]


def test_a_kernel_only_the_new_text_has_gets_a_verdict():
    extra = MIGRATED + "\n\n@T.prim_func\ndef extra(A: T.Tensor((1024,), \"float16\"), B: T.Tensor((1024,), " \
                       "\"float16\")):\n    with T.Kernel(8, threads=16) as bx:\n        B[bx] = A[bx]\n"
    v = verdicts(KERNEL, extra)
    assert v["main"][0] == "equivalent" and v["extra"][0] == "inconclusive", v


PIPELINED = KERNEL.replace("        for i in T.serial(8):", "        for i in T.Pipelined(8, num_stages=2):")


@pytest.mark.parametrize("edit", ["num_stages=3", "num_stages=2, order=[0]", "num_stages=2, stage=[1]"])
def test_loop_arguments_the_interpreter_does_not_run_are_compared(edit):
    new = PIPELINED.replace(OLD_CALL, NEW_CALL)
    assert verdicts(PIPELINED, new)["main"][0] == "equivalent"
    verdict, reason = verdicts(PIPELINED, new.replace("num_stages=2", edit))["main"]
    assert verdict == "inconclusive" and "other arguments differ" in reason, reason


def test_annotations_the_interpreter_does_not_run_are_compared():
    old = KERNEL.replace("        S = T.alloc_shared", "        T.reads(A[bx * 128 : bx * 128 + 128])\n        S = T.alloc_shared")
    new = old.replace(OLD_CALL, NEW_CALL)
    assert verdicts(old, new)["main"][0] == "equivalent"
    for changed in (new.replace("bx * 128 + 128])", "bx * 128 + 64])"), new.replace("T.reads(", "T.writes(")):
        verdict, reason = verdicts(old, changed)["main"]
        assert verdict == "inconclusive" and "annotations differ" in reason, reason


BYTES = '''
import tilelang.language as T


@T.prim_func
def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "int32")):
    with T.Kernel(8, threads=64) as bx:
        tx = T.get_thread_binding()
        R = T.alloc_shared((1024,), "uint8")
        P = T.alloc_shared((64,), "float32")
        for z in T.serial(EXT):
            P[tx] = T.float32(0)
        T.ptx_cp_async("float16", R.data, tx * 8, A.data, bx * 512 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i, j in T.Parallel(8, 64):
            B[bx * 8 + i, j] = T.Cast("int32", R[(i * 64 + j) * 2]) + T.Cast("int32", R[(i * 64 + j) * 2 + 1]) * 256
'''
BYTES_NEW_CALL = ('T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), R.data, tx * 8, 8, 2), '
                  'T.tvm_access_ptr(T.type_annotation("float16"), A.data, bx * 512 + tx * 8, 8, 1), 16)')


def test_an_allocation_used_only_in_code_that_may_not_run_leaves_the_merge_open():
    """A float16 call into a uint8 buffer: merged with P (two shared.dyn allocations in use), its offset counts
    float16 elements, and the rewrite in float16 is exact.  Whether lowering still counts P when its only use never
    runs is not modelled, so both readings are checked and the unmerged one refutes the rewrite."""
    for ext, want in (("1", "equivalent"), ("0", "inconclusive")):
        old = BYTES.replace("EXT", ext)
        new = old.replace('T.ptx_cp_async("float16", R.data, tx * 8, A.data, bx * 512 + tx * 8, 16)', BYTES_NEW_CALL)
        assert new != old
        verdict, reason = verdicts(old, new)["main"]
        assert verdict == want, (ext, reason)
        if want == "inconclusive":
            assert "may not run" in reason, reason
