"""Coverage of the text: a kernel is proven only when every cp.async site of both texts was built and
checked under some binding of its factory's parameters; index arithmetic in its index type; and through
the CLI, --verify --require-proof writes nothing whose verdict did not cover every site."""
from __future__ import annotations

import ast
import json

import numpy as np
import pytest

from conftest import run_cli
from test_cli import write

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify import verify_source
from cpasync_migrate.verify import coverage
from cpasync_migrate.verify.index import IndexOverflow, Ranges, check, wrap
from cpasync_migrate.verify.ir import Bin, Const, Kernel, Var

RULES = load_rules()

GUARDED = '''import tilelang.language as T


def make(N=256, mode="a"):
    @T.prim_func
    def k(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(N // 64, threads=8) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((64,), "float16", scope="shared")
            R = T.alloc_shared((64,), "float16", scope="shared")
            T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 64 + tx * 8, 16)
            if mode == "b":
                T.ptx_cp_async("float16", R.data, tx * 8, B.data, bx * 64 + tx * 8, 16)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.serial(8):
                C[bx * 64 + tx * 8 + i] = S[tx * 8 + i]
            if mode == "b":
                for i in T.serial(8):
                    C[bx * 64 + tx * 8 + i] = C[bx * 64 + tx * 8 + i] + R[tx * 8 + i]

    return k
'''


def _new(text: str) -> str:
    for buf, src in (("S", "A"), ("R", "B")):
        text = text.replace(
            f'T.ptx_cp_async("float16", {buf}.data, tx * 8, {src}.data, bx * 64 + tx * 8, 16)',
            f'T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), {buf}.data, tx * 8, 8, 2), '
            f'T.tvm_access_ptr(T.type_annotation("float16"), {src}.data, bx * 64 + tx * 8, 8, 1), 16)')
    return text


def test_site_lines_counts_every_reference():
    tree = ast.parse(GUARDED + "\ncp = T.ptx_cp_async\ncp(1, 2, 3)\nf(T.ptx_cp_async)\n")
    assert coverage.site_lines(tree) == [11, 13, 25, 26], "the alias line is not a site; its call and a use are"


def test_factory_bindings_read_defaults_calls_and_bools():
    text = GUARDED.replace('mode="a"', 'mode="a", on=True') + '\nk1 = make(128, mode="c")\nk2 = make(N=64)\n'
    defaults, given = coverage.factory_bindings(ast.parse(text), "make.k")
    assert defaults == {"N": 256, "mode": "a", "on": True}
    assert {"N": 128, "mode": "c"} in given and {"N": 64} in given and {"mode": "c"} in given
    assert {"on": False} in given
    _, fixed = coverage.factory_bindings(ast.parse(text), "make.k", frozenset({"mode"}))
    assert all("mode" not in b for b in fixed)


def test_uncovered_site_is_named():
    v, = verify_source(GUARDED, _new(GUARDED), "k.py", rules=RULES, target="0.1.8", seeds=1)
    assert v.verdict == "inconclusive"
    assert "old text line 13" in v.reason and "new text line 13" in v.reason
    assert v.detail["uncovered_sites"] == [{"text": "old", "line": 13}, {"text": "new", "line": 13}]
    assert "mode='a'" in v.reason, "the verdict names the bindings it covered"


def test_bind_reaches_the_site_and_is_named():
    v, = verify_source(GUARDED, _new(GUARDED), "k.py", rules=RULES, target="0.1.8", seeds=1, binds={"mode": "b"})
    assert v.verdict == "equivalent", v.reason
    assert "--bind mode='b'" in v.reason


def test_module_call_reaches_the_site():
    text = GUARDED + '\n\nk_b = make(mode="b")\n'
    v, = verify_source(text, _new(text), "k.py", rules=RULES, target="0.1.8", seeds=1)
    assert v.verdict == "equivalent", v.reason
    assert "swept to mode='b'" in v.reason


def test_sites_outside_any_prim_func_are_not_proven():
    text = ('import tilelang.language as T\n\n\ndef helper(S, A, tx):\n'
            '    T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)\n')
    new = text.replace('T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)',
                       'T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2), '
                       'T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1), 16)')
    vs = verify_source(text, new, "h.py", rules=RULES, target="0.1.8", seeds=1)
    assert [v.verdict for v in vs] == ["inconclusive"] and "line 5" in vs[0].reason


# ---------------------------------------------------------------- index arithmetic
def test_wrap_is_twos_complement():
    assert wrap(1 << 31, "int32") == -(1 << 31)
    assert wrap((1 << 32) + 5, "int32") == 5
    assert list(wrap(np.array([1 << 31, -1 - (1 << 31), 7], dtype=np.int64), "int32")) == [-(1 << 31), (1 << 31) - 1, 7]
    assert wrap(1 << 40, "int64") == 1 << 40


def test_ranges_type_and_bound_index_expressions():
    k = Kernel("k", 1, [], (4, 1, 1), (8, 1, 1), {"tx": ("threadIdx", 0)}, [], [])
    rg = Ranges(k)
    shl = Bin("shl", Var("tx"), Const(29, "int32"))
    assert rg.type_of(shl) == "int32" and rg.wraps(shl) and not rg.may_overflow(shl)
    mul = Bin("mul", Var("tx"), Const(536870912, "int32"))
    assert rg.may_overflow(mul)
    with pytest.raises(IndexOverflow):
        check(mul, 7 * 536870912, rg)
    assert check(shl, 4 << 29, rg) == -(1 << 31)
    assert rg.type_of(Bin("mul", Var("tx"), Const(1 << 33, "int32"))) == "int64", "a constant past int32 is int64"
    assert not rg.may_overflow(Bin("mul", Var("tx"), Const(8, "int32")))


# ---------------------------------------------------------------- through the CLI
def test_require_proof_writes_nothing_not_covering_every_site(tmp_path):
    f = write(tmp_path / "k.py", GUARDED)
    r = run_cli("--verify", "--device", "cpu", "--require-proof", "--target", "0.1.8", "--format", "json", "k.py",
                cwd=tmp_path)
    rep = json.loads(r.stdout)
    assert [v["verdict"] for v in rep["verdicts"]] == ["inconclusive"], rep["verdicts"]
    assert "line 13" in rep["verdicts"][0]["reason"]
    assert r.returncode == 2 and f.read_text() == GUARDED, "not written: the second site was never checked"
    r = run_cli("--verify", "--device", "cpu", "--require-proof", "--target", "0.1.8", "--bind", "mode=b", "k.py",
                cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f.read_text() != GUARDED and "ptx_cp_async(\"float16\"" not in f.read_text()


def test_require_proof_refuses_sites_outside_prim_funcs(tmp_path):
    text = ('import tilelang.language as T\n\n\n@T.macro\ndef load(S, A, tx):\n'
            '    T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)\n')
    f = write(tmp_path / "m.py", text)
    r = run_cli("--verify", "--device", "cpu", "--require-proof", "--unsafe-fixes", "--target", "0.1.8", "m.py",
                cwd=tmp_path)
    assert r.returncode == 2 and f.read_text() == text, r.stdout + r.stderr
    assert "in no prim_func" in r.stdout
    r = run_cli("--verify", "--device", "cpu", "--unsafe-fixes", "--target", "0.1.8", "m.py", cwd=tmp_path)
    assert r.returncode == 0 and f.read_text() != text, "without --require-proof an unproven file is written"


def test_gpu_path_requires_the_same_coverage(monkeypatch):
    """The GPU path checks the default binding only: an equivalent GPU verdict with a site that binding does
    not build is made inconclusive (the runner is replaced by one that calls every kernel equivalent)."""
    from cpasync_migrate.verify import gpu, verify_source_gpu

    def all_equal(directory, seeds=1):  # one row per kernel (the rows are zipped with the bundle's items)
        return {"device": {"name": "stub"}, "kernels": [
            {"verdict": "equivalent", "reason": "stub", "gpu": {}, "crosscheck": None} for _ in range(100)]}

    monkeypatch.setattr(gpu, "run_bundle", all_equal)
    text = GUARDED.replace('mode="a"', "with_b=False").replace('if mode == "b":', "if with_b:")
    v, = verify_source_gpu(text, _new(text), "k.py", rules=RULES, target="0.1.8", seeds=1)
    assert v.verdict == "inconclusive" and "old text line 13" in v.reason
    v, = verify_source_gpu(text, _new(text), "k.py", rules=RULES, target="0.1.8", seeds=1, binds={"with_b": True})
    assert v.verdict == "equivalent", v.reason


def test_bundle_writer_survives_an_overflowing_kernel():
    """The bundle writer's interpreter cross-check stops on unknown overflow like on a kernel error."""
    from cpasync_migrate.verify.bundle import kernel_items

    old = '''import tilelang.language as T


@T.prim_func
def k(A: T.Tensor((64,), "float16"), B: T.Tensor((128,), "float16")):
    with T.Kernel(1, threads=8) as bx:
        tx = T.get_thread_binding()
        S = T.alloc_shared((128,), "float16")
        T.ptx_cp_async("float16", S.data, ((tx * 536870912) // 536870912 + 4) * 8, A.data, tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(16):
            B[tx * 16 + i] = S[tx * 16 + i]
'''
    new = old.replace('T.ptx_cp_async("float16", S.data, ((tx * 536870912) // 536870912 + 4) * 8, A.data, tx * 8, 16)',
                      'T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, (tx + 4) * 8, 8, 2), '
                      'T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1), 16)')
    it, = kernel_items(old, new, "k.py", rules=RULES, target="0.1.8")
    assert "overflows int32" in it["crosscheck"]["interpreter_error"]
    assert any(s["verdict"] == "inconclusive" for s in it["sites"])
