"""The proof machinery: kernel IR, interpreter, per-site checks, verdicts."""
from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify import Verdict, verify_source
from cpasync_migrate.verify.build import build_kernels
from cpasync_migrate.verify.interp import Interpreter, KernelError
from cpasync_migrate.verify.ir import CpAsync, Opaque, Parallel

HERE = Path(__file__).parent / "fixtures" / "verify"
RULES = load_rules()
CASES = {c["name"]: c for c in tomllib.loads((HERE / "cases.toml").read_text())["case"]}
MUTANTS = tomllib.loads((HERE / "mutants.toml").read_text())["mutant"]


def run_case(case, new_text=None, target=None, seeds=3):
    old = (HERE / case["old"]).read_text()
    new = new_text if new_text is not None else (HERE / case["new"]).read_text()
    return verify_source(old, new, case["old"], rules=RULES, target=target or case["target"],
                         source=case.get("source"), seeds=seeds)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_pairs(name):
    case = CASES[name]
    verdicts = run_case(case)
    got = {v.kernel: v.verdict for v in verdicts}
    assert got == case["expect"], [v.to_dict() for v in verdicts]
    for v in verdicts:
        if v.verdict == "equivalent" and not v.detail.get("unchanged"):
            assert v.sites and all(s["verdict"] == "equivalent" for s in v.sites)
            assert v.detail["interpreter"]["verdict"] == "equivalent"


def _mutant_id(m):
    return f"{m['case']}:{m['kind']}"


@pytest.mark.parametrize("mutant", MUTANTS, ids=_mutant_id)
def test_mutants_are_caught(mutant):
    case = CASES[mutant["case"]]
    text = (HERE / case["new"]).read_text()
    for find, repl in mutant["edits"]:
        assert find in text, f"mutant edit does not apply: {find!r}"
        text = text.replace(find, repl)
    verdicts = run_case(case, text, mutant.get("target"), seeds=1)
    assert verdicts and all(v.verdict == "mismatch" for v in verdicts if v.kernel in case["expect"]
                            and case["expect"][v.kernel] == "equivalent"), [v.to_dict() for v in verdicts]
    for v in verdicts:
        if v.verdict == "mismatch":
            site_bad = any(s["verdict"] == "mismatch" for s in v.sites)
            assert site_bad or v.detail["interpreter"]["verdict"] == "mismatch"
            assert v.reason


def test_misc_reasons_name_the_construct():
    verdicts = {v.kernel: v for v in run_case(CASES["misc"])}
    g = verdicts["make_gemm.gemm"]
    assert "T.gemm" in g.reason and "line 28" in g.reason
    # the kernel cannot run, but both of its sites are still proven
    assert [s["verdict"] for s in g.sites] == ["equivalent", "equivalent"]
    assert [s["line"] for s in g.sites] == [23, 24]


def test_verdict_shape():
    v = run_case(CASES["copy_tile"])[0]
    d = v.to_dict()
    assert set(d) == {"kernel", "line", "verdict", "reason", "sites", "detail"}
    assert d["kernel"] == "make_copy.main" and d["line"] == 7
    assert d["sites"][0]["line"] == 13
    assert isinstance(v, Verdict)


def test_mismatch_reason_names_buffer_index_values_seed():
    case = CASES["copy_tile"]
    text = (HERE / case["new"]).read_text().replace(", 8, 1), 16)", ", 8, 1), 8)")
    v = run_case(case, text, seeds=1)[0]
    fd = v.detail["first_difference"]
    assert v.verdict == "mismatch"
    assert fd["buffer"] == "B" and fd["index"] == [0, 4] and fd["seed"] == 0
    # the first 8 bytes of each 16-byte chunk arrive; halves 4..7 keep the shared sentinel 0xa5a5
    assert fd["new"].endswith("(0xa5a5)")
    assert "B[0, 4]" in v.reason and "seed 0" in v.reason


# ------------------------------------------------------------------ IR builder
FACTORY = '''
import tilelang.language as T
WIDTH = 8

def make(M=32, dtype="float16", threads=WIDTH * 4):
    @T.macro
    def stage(dst, src, off):
        T.ptx_cp_async(dtype, dst.data, off, src.data, off, 16)

    @T.prim_func
    def main(A: T.Tensor((M, 8), dtype), B: T.Tensor((M, 8), dtype)):
        with T.Kernel(M // 32, threads=threads) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((M, 8), dtype)
            stage(S, A, tx * 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i, j in T.Parallel(M, 8):
                B[i, j] = S[i, j]
    return main
'''


def test_factory_bound_from_defaults_constants_and_binds():
    k = build_kernels(FACTORY, RULES, meaning="bytes")[0]
    assert k.error is None
    assert k.kernel.block == (32, 1, 1) and k.kernel.params[0].shape == (32, 8)
    assert isinstance(k.kernel.sites[0], CpAsync) and k.kernel.sites[0].dst.buf.name == "S"
    assert any(isinstance(s, Parallel) for s in k.kernel.body)
    k2 = build_kernels(FACTORY, RULES, meaning="bytes", binds={"M": "64", "dtype": "float32"})[0].kernel
    assert k2.params[0].shape == (64, 8) and k2.params[0].dtype == "float32" and k2.grid == (2, 1, 1)


def test_unbound_factory_parameter_is_named():
    text = FACTORY.replace("def make(M=32,", "def make(M,")
    k = build_kernels(text, RULES, meaning="bytes")[0]
    assert k.kernel is None and "M" in k.error.construct and "--bind" in k.error.construct
    v = verify_source(text, text.replace("T.ptx_cp_async(dtype, dst.data, off, src.data, off, 16)",
                                          "T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation(dtype), dst.data, off, "
                                          "8, 2), T.tvm_access_ptr(T.type_annotation(dtype), src.data, off, 8, 1), 16)"),
                      "f.py", rules=RULES, target="0.1.8")[0]
    assert v.verdict == "inconclusive" and "--bind M=VALUE" in v.reason
    migrated = text.replace("T.ptx_cp_async(dtype, dst.data, off, src.data, off, 16)",
                            "T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation(dtype), dst.data, off, 8, 2), "
                            "T.tvm_access_ptr(T.type_annotation(dtype), src.data, off, 8, 1), 16)")
    v2 = verify_source(text, migrated, "f.py", rules=RULES, target="0.1.8", binds={"M": "32"})[0]
    assert v2.verdict == "equivalent"


def test_tvmscript_launch_and_thread_binding():
    text = '''
import tilelang.language as T

@T.prim_func
def f(A: T.Buffer((4, 64), "float32"), B: T.Buffer((4, 64), "float32")):
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(16, thread="threadIdx.x"):
            S = T.alloc_buffer((64,), "float32", scope="shared.dyn")
            T.ptx_cp_async("float32", S.data, tx * 4, A.data, bx * 64 + tx * 4, 16)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.vectorized(4):
                B[bx, tx * 4 + i] = T.if_then_else(S[tx * 4 + i] > T.float32(0), S[tx * 4 + i], T.min(S[tx * 4 + i], T.float32(-1)))
'''
    k = build_kernels(text, RULES, meaning="bytes")[0].kernel
    assert k.grid == (4, 1, 1) and k.block == (16, 1, 1)
    assert verify_source(text, text.replace('T.ptx_cp_async("float32", S.data, tx * 4, A.data, bx * 64 + tx * 4, 16)',
                                            'T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float32"), S.data, '
                                            'tx * 4, 4, 2), T.tvm_access_ptr(T.type_annotation("float32"), A.data, '
                                            'bx * 64 + tx * 4, 4, 1), 16)'),
                         "f.py", rules=RULES, target="0.1.8")[0].verdict == "equivalent"


def test_unsupported_statement_is_opaque_and_named():
    text = FACTORY.replace("            T.ptx_commit_group()\n", "            T.ptx_commit_group()\n            T.atomic_add(B[0, 0], 1)\n")
    k = build_kernels(text, RULES, meaning="bytes")[0].kernel
    assert any(isinstance(s, Opaque) and s.construct == "T.atomic_add" for s in k.body)


# ------------------------------------------------------------------ interpreter semantics
def _kernel(body_old, decls="", threads=32, meaning="bytes"):
    text = f'''
import tilelang.language as T

@T.prim_func
def k(A: T.Tensor((256,), "float16"), B: T.Tensor((256,), "float16")):
    with T.Kernel(1, threads={threads}) as bx:
        tx = T.get_thread_binding()
        S = T.alloc_shared((256,), "float16")
{decls}{body_old}
'''
    return build_kernels(text, RULES, meaning=meaning)[0].kernel


WIDTHS = {"legacy": (4, 8, 16), "bytes": (4, 8, 16), "num_elems": (4, 8, 16)}


def _run(k, fill=0xA5):
    a = np.arange(256, dtype=np.float16).view(np.uint8).copy()
    b = np.zeros(512, dtype=np.uint8)
    out = Interpreter(k, RULES, WIDTHS).run({"A": a, "B": b}, fill)
    return out["B"].view(np.float16)


COPY = "        T.ptx_cp_async(\"float16\", S.data, tx * 8, A.data, tx * 8, 16)\n"
DRAIN = "        for i in T.serial(8):\n            B[tx * 8 + i] = S[tx * 8 + i]\n"


def test_copy_visible_after_wait():
    k = _kernel(COPY + "        T.ptx_commit_group()\n        T.ptx_wait_group(0)\n" + DRAIN)
    assert np.array_equal(_run(k), np.arange(256, dtype=np.float16))


def test_read_before_wait_is_an_error():
    k = _kernel(COPY + "        T.ptx_commit_group()\n" + DRAIN)
    with pytest.raises(KernelError, match="in flight"):
        _run(k)


def test_uncommitted_copy_is_not_retired_by_wait():
    k = _kernel(COPY + "        T.ptx_wait_group(0)\n" + DRAIN)
    with pytest.raises(KernelError, match="in flight"):
        _run(k)


def test_wait_group_n_keeps_the_newest_groups_in_flight():
    body = (COPY + "        T.ptx_commit_group()\n"
            + "        T.ptx_cp_async(\"float16\", S.data, tx * 8, A.data, tx * 8, 16)\n" * 0
            + "        T.ptx_commit_group()\n        T.ptx_wait_group(1)\n" + DRAIN)
    # group 0 holds the copy, group 1 is empty: wait_group(1) retires group 0
    assert np.array_equal(_run(_kernel(body)), np.arange(256, dtype=np.float16))
    body2 = ("        T.ptx_commit_group()\n" + COPY + "        T.ptx_commit_group()\n        T.ptx_wait_group(1)\n"
             + DRAIN)
    with pytest.raises(KernelError, match="in flight"):
        _run(_kernel(body2))


def test_bad_width_and_misalignment_and_oob_are_errors():
    with pytest.raises(KernelError, match="12 bytes"):
        _run(_kernel(COPY.replace(", 16)", ", 12)")))
    with pytest.raises(KernelError, match="not aligned"):
        _run(_kernel(COPY.replace("A.data, tx * 8", "A.data, tx * 8 + 1")))
    with pytest.raises(KernelError, match="out of bounds"):
        _run(_kernel(COPY.replace("A.data, tx * 8", "A.data, tx * 8 + 8"), threads=32))


def test_predicate_false_zero_fills():
    body = ('        T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2), '
            'T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1), 16, tx < 16)\n'
            "        T.ptx_commit_group()\n        T.ptx_wait_group(0)\n" + DRAIN)
    out = _run(_kernel(body))
    assert np.array_equal(out[:128], np.arange(128, dtype=np.float16))
    assert not out[128:].view(np.uint16).any()


def test_num_elems_meaning_copies_elements():
    body = ('        T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2), '
            'T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1), 8)\n'
            "        T.ptx_commit_group()\n        T.ptx_wait_group(0)\n" + DRAIN)
    assert np.array_equal(_run(_kernel(body, meaning="num_elems")), np.arange(256, dtype=np.float16))
    # the same text read as bytes moves 8 bytes: halves 4..7 of each chunk keep the sentinel
    out = _run(_kernel(body, meaning="bytes"))
    assert out.view(np.uint16)[4] == 0xA5A5 and out[3] == 3


def test_divergent_barrier_is_an_error():
    k = _kernel("        if tx < 4:\n            T.sync_threads()\n")
    with pytest.raises(KernelError, match="part of a block"):
        _run(k)


def test_racy_kernel_is_inconclusive_not_mismatch():
    text = '''
import tilelang.language as T

@T.prim_func
def k(A: T.Tensor((64,), "float32"), B: T.Tensor((1,), "float32")):
    with T.Kernel(1, threads=16) as bx:
        tx = T.get_thread_binding()
        S = T.alloc_shared((64,), "float32")
        T.ptx_cp_async("float32", S.data, tx * 4, A.data, tx * 4, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        B[0] = S[tx * 4]
'''
    new = text.replace('T.ptx_cp_async("float32", S.data, tx * 4, A.data, tx * 4, 16)',
                       'T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float32"), S.data, tx * 4, 4, 2), '
                       'T.tvm_access_ptr(T.type_annotation("float32"), A.data, tx * 4, 4, 1), 16)')
    v = verify_source(text, new, "k.py", rules=RULES, target="0.1.8")[0]
    assert v.verdict == "inconclusive" and "not deterministic" in v.reason


def test_syntax_error_in_new_text_is_mismatch():
    case = CASES["copy_tile"]
    v = run_case(case, "def broken(:\n")
    assert [x.verdict for x in v] == ["mismatch"]


# ------------------------------------------------------------------ examples/
EXAMPLES = sorted((Path(__file__).parents[1] / "examples").glob("*.py"))


@pytest.mark.skipif(not EXAMPLES, reason="no examples")
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_kernels_run_in_the_interpreter(path):
    """Each example's legacy kernel is inside the modelled subset and runs without
    kernel errors, deterministically (so its migration can be proven)."""
    from cpasync_migrate.verify.dynamic import run_pair

    built = build_kernels(path.read_text(), RULES, meaning="bytes")
    assert built
    for b in built:
        assert b.error is None and not b.kernel.unsupported, (b.qualname, b.error)
        res = run_pair(b.kernel, b.kernel, RULES, WIDTHS, seeds=1)
        assert res.verdict == "equivalent", (b.qualname, res.reason)
        assert res.bytes > 0


# one legacy copy per thread of a block, read back after the wait (N: a module constant some tests spell a count with)
ONE_COPY = '''
import tilelang.language as T

N = 8

@T.prim_func
def k(A: T.Tensor((8, 64), "float16"), B: T.Tensor((8, 64), "float16")):
    with T.Kernel(8, threads=8) as bx:
        tx = T.get_thread_binding()
        S = T.alloc_shared((64,), "float16")
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 64 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for j in T.serial(8):
            B[bx, tx * 8 + j] = S[tx * 8 + j]
'''
ONE_COPY_CALL = 'T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 64 + tx * 8, 16)'


def test_access_ptr_style_and_its_rw_modes():
    old, call = ONE_COPY, ONE_COPY_CALL
    good = old.replace(call, 'T.ptx_cp_async(T.access_ptr(S[tx * 8], "w", 8), T.access_ptr(A[bx, tx * 8], "r", 8), 8)')
    (v,) = verify_source(old, good, "a.py", rules=RULES, target="0.1.9")
    assert v.verdict == "equivalent", v.to_dict()
    swapped = good.replace('"w", 8)', '"x", 8)').replace('"r", 8)', '"w", 8)').replace('"x", 8)', '"r", 8)')
    (v,) = verify_source(old, swapped, "a.py", rules=RULES, target="0.1.9")
    assert v.verdict == "mismatch" and "rw mask" in v.reason
    shifted = good.replace("A[bx, tx * 8]", "A[bx, tx * 4]")
    (v,) = verify_source(old, shifted, "a.py", rules=RULES, target="0.1.9")
    assert v.verdict == "mismatch" and v.detail["interpreter"]["verdict"] == "mismatch"


@pytest.mark.parametrize("count,verdict", [
    ("8", "equivalent"), ("16 // 2", "equivalent"), ("N", "equivalent"), ("int(8)", "equivalent"),
    ("T.int32(8)", "equivalent"), ("min(8, 99)", "equivalent"),
    ("T.int32(4) * 2", "inconclusive"), ("tx - tx + 8", "inconclusive"), ("8.0", "inconclusive"),
])
def test_an_element_count_that_is_an_int_when_the_kernel_is_built_is_an_integer_immediate(count, verdict):
    """Under 0.1.9 the code generator requires the count as an IntImm.  A Python int when the kernel is built
    (TileLang's call_intrin makes it one) and an integer dtype's constructor of one are; what TVM or the passes
    might fold is not known (test_realtl_fuzz.py's count spellings check these readings against real lowering)."""
    old, call = ONE_COPY, ONE_COPY_CALL
    new = old.replace(call, f'T.ptx_cp_async(T.access_ptr(S[tx * 8], "w", 8), T.access_ptr(A[bx, tx * 8], "r", 8), '
                            f'{count})')
    (v,) = verify_source(old, new, "a.py", rules=RULES, target="0.1.9")
    assert v.verdict == verdict, v.to_dict()
    if verdict == "inconclusive":
        assert "size literal" in v.reason


WIDTH_OLD = '''
import tilelang.language as T


@T.prim_func
def main(A: T.Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        S = T.alloc_shared((128,), "float16", scope="shared")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 2)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]
'''


def test_a_width_the_original_line_already_had_is_not_the_rewrites_mismatch():
    """A 2-byte copy the rewrite left as it was (not a cp.async width) is the original's problem: the
    verdict is not a mismatch blaming the rewrite of the other line."""
    new = WIDTH_OLD.replace(
        'T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)',
        'T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2), '
        'T.tvm_access_ptr(T.type_annotation("float16"), A.data, bx * 128 + tx * 8, 8, 1), 16)')
    assert new != WIDTH_OLD
    (v,) = verify_source(WIDTH_OLD, new, "w.py", rules=load_rules(), target="0.1.8")
    # the line left in the legacy form does not build under 0.1.8 (issue 23): that line is named, not the
    # width of the rewritten one
    left = next(i for i, line in enumerate(new.splitlines(), 1) if 'T.ptx_cp_async("float16"' in line)
    assert v.verdict == "mismatch" and f"line {left} is in the legacy" in v.reason, v.to_dict()
    assert "width" not in v.reason, v.to_dict()


# ---------------------------------------------------------------------------------------------- options
def test_one_options_value_or_its_fields_as_keywords_give_the_same_verdicts():
    from cpasync_migrate.verify import VerifyOptions

    case = CASES["copy_tile"]
    old, new = (HERE / case["old"]).read_text(), (HERE / case["new"]).read_text()
    opts = VerifyOptions(rules=RULES, target=case["target"], seeds=1)
    by_value = [v.to_dict() for v in verify_source(old, new, case["old"], opts)]
    by_keywords = [v.to_dict() for v in verify_source(old, new, case["old"], rules=RULES, target=case["target"],
                                                      seeds=1)]
    assert by_value == by_keywords and by_value[0]["verdict"] == "equivalent"
    # a keyword given with the value replaces the value's own field: read under 0.1.9 the same text
    # (bytes where 0.1.9 counts elements) is refuted
    (v,) = verify_source(old, new, case["old"], opts, target="0.1.9")
    assert v.verdict == "mismatch", v.to_dict()
    with pytest.raises(TypeError):
        verify_source(old, new, case["old"], opts, seed=1)  # not a field


def test_verify_options_is_a_frozen_value():
    import dataclasses

    from cpasync_migrate.verify import VerifyOptions

    binds = {"M": "32"}
    opts = VerifyOptions(rules=RULES, target="0.1.9", binds=binds)
    binds["M"] = "64"
    assert opts.binds["M"] == "32"  # kept as given, not shared
    with pytest.raises(TypeError):
        opts.binds["M"] = "64"
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.target = "0.1.8"
    r = opts.resolved()
    assert r.target is RULES.generation("0.1.9") and r.source is r.target  # no source: the target's meaning
    assert VerifyOptions.of(r, source="0.1.8").resolved().source is RULES.generation("0.1.8")
    assert opts.widths() == {"legacy": tuple(RULES.legacy.widths), "bytes": r.target.widths,
                             "num_elems": r.target.widths}
